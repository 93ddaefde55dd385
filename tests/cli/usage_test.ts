/**
 * Every command of the front door speaks one way, as a process: `-h` and `--help` print help that
 * starts with the one usage form on stdout (exit 0, nothing on stderr); an unknown flag is one line
 * on stderr naming the flag meant and where the help is (exit 2, nothing on stdout).
 */
import assert from "node:assert/strict";
import { COMMANDS } from "../../src/cli/main.ts";

const MOD = new URL("../../mod.ts", import.meta.url).pathname;

async function cli(args: string[]) {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--frozen", MOD, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: r.code, out: text(r.stdout), err: text(r.stderr) };
}

for (const { name } of COMMANDS) {
  Deno.test(`mod.ts ${name}: -h and --help on stdout, an unknown flag in one line on stderr`, async () => {
    for (const flag of ["-h", "--help"]) {
      const help = await cli([name, flag]);
      assert.deepEqual([help.code, help.err], [0, ""], `${name} ${flag}`);
      assert.match(
        help.out,
        new RegExp(`^Usage: mod\\.ts ${name} [^]*?\\n\\(also \`\\./deno task \\w+\`\\)\\n`),
      );
    }
    const bad = await cli([name, "--hlep"]);
    assert.deepEqual(bad, {
      code: 2,
      out: "",
      err: `error: unknown flag --hlep; did you mean --help? See 'mod.ts ${name} --help'.\n`,
    });
  });
}

Deno.test("mod.ts: --version on stdout; no command, or a misspelt one, in one line on stderr", async () => {
  const version = await cli(["--version"]);
  assert.deepEqual([version.code, version.err], [0, ""]);
  assert.match(version.out, /^platform-operator \d+\.\d+\.\d+\n$/);
  assert.deepEqual(await cli([]), {
    code: 2,
    out: "",
    err: "error: no command given. See 'mod.ts --help'.\n",
  });
  assert.deepEqual(await cli(["ratelimt"]), {
    code: 2,
    out: "",
    err: `error: unknown command "ratelimt"; did you mean ratelimit? See 'mod.ts --help'.\n`,
  });
});

Deno.test("mod.ts ratelimit -f - reads the process's stdin", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--frozen", MOD, "ratelimit", "-f", "-", "--render"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const sample = new URL("../../samples/ratelimit-workload.yaml", import.meta.url);
  const writer = child.stdin.getWriter();
  await writer.write(await Deno.readFile(sample));
  await writer.close();
  const r = await child.output();
  assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
  assert.match(
    new TextDecoder().decode(r.stdout),
    /^apiVersion: networking\.istio\.io\/v1alpha3\nkind: EnvoyFilter\n/,
  );
});

Deno.test("a warm `deno task` run of a command prints nothing about downloads", async () => {
  // `deno task` installs the locked npm packages but not their registry metadata, and a run
  // without --cached-only starts fetching that metadata (3 MB for zod) on every run and exits
  // before it is saved, printing `Download https://registry.npmjs.org/zod` each time. The state
  // `deno task` leaves on a fresh machine: this cache's packages, hard-linked, without metadata.
  const info = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  const denoDir = JSON.parse(new TextDecoder().decode(info.stdout)).denoDir as string;
  const fresh = await Deno.makeTempDir({ prefix: "deno-dir-" });
  try {
    const copy = await new Deno.Command("cp", { args: ["-al", `${denoDir}/npm`, fresh] }).output();
    assert.equal(copy.code, 0, new TextDecoder().decode(copy.stderr));
    const drop = await new Deno.Command("find", {
      args: [fresh, "-name", "registry.json", "-delete"],
    }).output();
    assert.equal(drop.code, 0);
    const task = (args: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: ["task", ...args],
        cwd: new URL("../../", import.meta.url).pathname,
        stdout: "null",
        stderr: "piped",
        env: { NO_COLOR: "1", DENO_DIR: fresh },
      }).output();
    for (
      const args of [
        ["ratelimit", "-f", "samples/ratelimit-workload.yaml", "--rate", "1/s", "--for", "1s"],
        ["ratelimit", "-f", "samples/ratelimit-workload.yaml", "--render"],
        ["sim", "--help"],
        ["crds", "--check"],
      ]
    ) {
      const r = await task(args);
      const err = new TextDecoder().decode(r.stderr);
      assert.equal(r.code, 0, err);
      assert.deepEqual(
        err.split("\n").filter((l) => l !== "" && !l.startsWith("Task ")),
        [],
        `deno task ${args.join(" ")}`,
      );
    }
  } finally {
    await Deno.remove(fresh, { recursive: true });
  }
});
