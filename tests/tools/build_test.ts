/**
 * `./deno task build` and the progress every long build prints: a start line, a line at least
 * every heartbeat while it runs, its time at the end; a Go build through the binary cache builds
 * once and is then up to date; the build commands docs/testing.md shows run as shown.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { GoCache, goEnv } from "../../tools/gobuild.ts";
import { formatElapsed, step } from "../../tools/progress.ts";
import { selectTargets, TARGETS } from "../../tools/build.ts";
import { pageCommands } from "../docs_shown.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("progress: a step logs its start, a heartbeat while it runs and its time", async () => {
  const lines: string[] = [];
  const out = await step("building x", (m) => lines.push(m), async () => {
    await new Promise((r) => setTimeout(r, 120));
    return 7;
  }, { everyMs: 25, done: "built x" });
  assert.equal(out, 7);
  assert.equal(lines[0], "building x");
  const beats = lines.filter((l) => /^still building x \(\d+\.\ds\)$/.test(l));
  assert.ok(beats.length >= 2, lines.join("\n"));
  assert.match(lines.at(-1)!, /^built x in \d+\.\ds$/);
});

Deno.test("progress: a failing step says so with its time and stops its heartbeat", async () => {
  const lines: string[] = [];
  await assert.rejects(
    step("building y", (m) => lines.push(m), () => Promise.reject(new Error("boom")), {
      everyMs: 10,
    }),
    /boom/,
  );
  assert.match(lines.at(-1)!, /^building y failed after \d+\.\ds$/);
  const n = lines.length;
  await new Promise((r) => setTimeout(r, 40));
  assert.equal(lines.length, n, "no heartbeat after the step ended");
});

Deno.test("progress: elapsed times read as people write them", () => {
  assert.equal(formatElapsed(4_250), "4.3s");
  assert.equal(formatElapsed(95_000), "1m35s");
  assert.equal(formatElapsed(3_600_000), "60m00s");
});

Deno.test("build: --only and --skip pick targets in build order and name an unknown one", () => {
  assert.deepEqual(selectTargets("crdgen,cluster").map((t) => t.name), ["cluster", "crdgen"]);
  assert.deepEqual(selectTargets(undefined).map((t) => t.name), TARGETS.map((t) => t.name));
  assert.throws(() => selectTargets("cluster,kubelett"), /unknown target kubelett; targets: /);
  assert.throws(() => selectTargets(","), /unknown target \(none given\)/);
  assert.deepEqual(
    selectTargets(undefined, "cluster,node,image").map((t) => t.name),
    TARGETS.map((t) => t.name).filter((n) => !["cluster", "node", "image"].includes(n)),
  );
  assert.deepEqual(selectTargets("cluster,crdgen", "cluster").map((t) => t.name), ["crdgen"]);
  assert.throws(() => selectTargets(undefined, "helm,nope"), /^Error: --skip: unknown target nope/);
});

Deno.test("build: a Go build through the cache logs progress, then is up to date", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gobuild-" });
  try {
    const mod = join(dir, "hello");
    await Deno.mkdir(mod);
    await Deno.writeTextFile(join(mod, "go.mod"), "module example.com/hello\n\ngo 1.26\n");
    await Deno.writeTextFile(join(mod, "main.go"), "package main\n\nfunc main() {}\n");
    const build = {
      name: "hello",
      dir: mod,
      inputs: ["go.mod", "main.go"],
      extra: [goEnv()],
      packages: ["."],
      outputs: ["hello"],
      ldflags: "-s -w",
    };
    const cache = new GoCache(join(dir, "bin"));
    const lines: string[] = [];
    assert.equal(await cache.ensure([build], (m) => lines.push(m)), true);
    assert.equal(lines[0], "building hello: hello");
    assert.match(lines.at(-1)!, /^built hello in \d/);
    assert.ok((await Deno.stat(cache.path("hello"))).isFile);
    assert.equal(await cache.ensure([build], (m) => lines.push(m)), false, "up to date");
    await Deno.writeTextFile(join(mod, "main.go"), "package main\n\nfunc main() { _ = 1 }\n");
    assert.deepEqual((await cache.status([build])).stale, ["hello"], "a changed source is stale");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Runs a shown command with sh from the repository root. */
async function sh(command: string) {
  const out = await new Deno.Command("sh", {
    args: ["-c", command],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("docs: testing.md: shown build commands run as shown", async () => {
  const page = "docs/testing.md";
  const shown = pageCommands(page, await Deno.readTextFile(join(ROOT, page)))
    .map((c) => c.command).filter((c) => /^\.\/deno task build --/.test(c));
  assert.ok(shown.length >= 2, shown.join("; "));
  for (const command of new Set(shown)) {
    const r = await sh(command);
    assert.equal(r.code, 0, `${command}:\n${r.stderr}`);
    if (command.includes("--list")) {
      for (const t of TARGETS) assert.match(r.stdout, new RegExp(`^${t.name}\\s`, "m"));
    } else assert.match(r.stderr, /targets up to date in /);
  }
  const bad = await sh("./deno task build --only=nope");
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /error: --only: unknown target nope; targets: cluster, /);
});
