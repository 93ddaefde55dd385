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
