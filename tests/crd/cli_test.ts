/** The CLI front door (`mod.ts`), its `crds` command, and the folder `crds` and `deploy` are given. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { main as crds } from "../../src/cli/crds.ts";
import { main as deploy } from "../../src/cli/deploy.ts";
import { type Command, COMMANDS, main, usage } from "../../src/cli/main.ts";
import { renderCrdFiles } from "../../src/crd/render.ts";

function recorder() {
  const lines = { out: [] as string[], err: [] as string[] };
  return {
    lines,
    output: { out: (l: string) => lines.out.push(l), err: (l: string) => lines.err.push(l) },
  };
}

const seen: string[][] = [];
const fake: Command[] = [{
  name: "echo",
  summary: "records its arguments",
  load: () => Promise.resolve({ main: (args: string[]) => (seen.push(args), Promise.resolve(7)) }),
}];

Deno.test("--help and help list every command with its summary, exit 0", async () => {
  for (const args of [["--help"], ["help"], ["-h"]]) {
    const { lines, output } = recorder();
    assert.equal(await main(args, COMMANDS, output), 0);
    const text = lines.out.join("\n").split("\n");
    for (const c of COMMANDS) {
      assert.ok(text.some((l) => l.startsWith(`  ${c.name} `) && l.endsWith(c.summary)), c.name);
    }
  }
  assert.match(usage(), /crds/);
});

Deno.test("a command gets the arguments after its name and its exit code is returned", async () => {
  const { output } = recorder();
  assert.equal(await main(["echo", "a", "--b"], fake, output), 7);
  assert.deepEqual(seen.at(-1), ["a", "--b"]);
  assert.equal(await main(["help", "echo"], fake, output), 7);
  assert.deepEqual(seen.at(-1), ["--help"]);
});

Deno.test("an unknown command or none is an error with exit code 2", async () => {
  const unknown = recorder();
  assert.equal(await main(["nope"], fake, unknown.output), 2);
  assert.deepEqual(unknown.lines.err, [
    `error: unknown command "nope". See 'mod.ts --help'.`,
  ]);
  const typo = recorder();
  assert.equal(await main(["ech"], fake, typo.output), 2);
  assert.deepEqual(typo.lines.err, [
    `error: unknown command "ech"; did you mean echo? See 'mod.ts --help'.`,
  ]);
  const none = recorder();
  assert.equal(await main([], fake, none.output), 2);
  assert.deepEqual(none.lines, { out: [], err: ["error: no command given. See 'mod.ts --help'."] });
});

Deno.test("--version prints the version of deno.json on stdout, exit 0", async () => {
  const { lines, output } = recorder();
  assert.equal(await main(["--version"], fake, output), 0);
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  assert.match(config.version, /^\d+\.\d+\.\d+/);
  assert.deepEqual(lines, { out: [`platform-operator ${config.version}`], err: [] });
});

Deno.test("crds writes the files, --check passes then, and fails on a stale or foreign file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    assert.equal(await crds(["--check", "--dir", dir]), 1);
    assert.equal(await crds(["--dir", dir]), 0);
    for (const f of renderCrdFiles()) {
      assert.equal(await Deno.readTextFile(join(dir, f.name)), f.text);
    }
    assert.equal(await crds(["--check", "--dir", dir]), 0);
    const [first] = renderCrdFiles();
    await Deno.writeTextFile(join(dir, first.name), first.text.replace("v1alpha1", "v1beta1"));
    assert.equal(await crds(["--check", "--dir", dir]), 1);
    assert.equal(await crds(["--dir", dir]), 0);
    await Deno.writeTextFile(join(dir, "other.yaml"), "kind: Other\n");
    assert.equal(await crds(["--check", "--dir", dir]), 1);
    assert.equal(await crds(["--dir", dir]), 0);
    assert.equal(
      await Deno.readTextFile(join(dir, "other.yaml")),
      "kind: Other\n",
      "never deletes a file it did not write",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("crds rejects an unknown option with exit code 2", async () => {
  assert.equal(await crds(["--bogus"]), 2);
});

/** The exit code of `run` and what it printed to stderr (console.error), captured. */
async function stderrOf(run: () => Promise<number>): Promise<{ code: number; err: string }> {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => lines.push(args.join(" "));
  try {
    return { code: await run(), err: lines.join("\n") };
  } finally {
    console.error = original;
  }
}

Deno.test("crds and deploy: --dir empty, or a file, is a usage error (exit 2), not a crash", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "a-file"), "");
    for (const command of [crds, deploy]) {
      for (
        const [arg, said] of [["--dir=", "--dir is empty"], [
          `--dir=${dir}/a-file`,
          "is not a folder",
        ], [`--dir=${dir}/a-file/sub`, "is not a folder"]]
      ) {
        const r = await stderrOf(() => command(["--check", arg]));
        assert.equal(r.code, 2, `${arg}: ${r.err}`);
        assert.match(r.err, new RegExp(said), arg);
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deploy: a folder without a usable kustomization.yaml says what is wrong in one line, exit 1", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cases: [string, string | undefined, RegExp][] = [
      [
        "empty",
        undefined,
        /empty\/kustomization\.yaml: no such file; is .*empty a deploy folder\?$/,
      ],
      ["broken", "a: [\n", /broken\/kustomization\.yaml: Flow sequence/],
      ["number", "images: 5\n", /number\/kustomization\.yaml sets no images/],
      ["none", "foo: 1\n", /none\/kustomization\.yaml sets no images/],
      ["blank", "", /blank\/kustomization\.yaml sets no images/],
    ];
    for (const [name, text, said] of cases) {
      await Deno.mkdir(join(dir, name));
      if (text !== undefined) await Deno.writeTextFile(join(dir, name, "kustomization.yaml"), text);
      const r = await stderrOf(() => deploy(["--check", `--dir=${join(dir, name)}`]));
      assert.equal(r.code, 1, `${name}: ${r.err}`);
      assert.equal(r.err.split("\n").length, 1, r.err);
      assert.match(r.err, said);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
