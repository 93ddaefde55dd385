/** The CLI front door (`mod.ts`) and its `crds` command. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { main as crds } from "../../src/cli/crds.ts";
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
