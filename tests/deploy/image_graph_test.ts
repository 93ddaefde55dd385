/**
 * The deno-runtime image runs the operator's module graph from /app: every repository file that
 * graph reaches, the data files a module's preload imports among them, is copied into the build
 * stage and from it into the image (the compiled binary embeds the same graph:
 * tests/architecture/runtime_graph_test.ts).
 */
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";
import { dockerfileStages, operatorFiles } from "./dockerfile.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The files of `files` that the stages do not carry from the build context into /app. */
function notInImage(files: readonly string[], stages: Map<string, string[]>): string[] {
  const copied = (stage: string) =>
    (stages.get(stage) ?? []).map((l) => l.split(/\s+/)).filter((w) => w[0] === "COPY");
  const built = copied("build").filter((w) => !w[1].startsWith("--")).flatMap((w) =>
    w.slice(1, -1)
  );
  const image = copied("deno-runtime").filter((w) => w[1] === "--from=build").map((w) =>
    w[2].replace(/^\/app\//, "")
  );
  const carried = (f: string, from: string[]) =>
    from.some((p) => p.endsWith("/") ? f.startsWith(p) : f === p);
  return files.filter((f) => !carried(f, built) || !carried(f, image));
}

Deno.test("the deno-runtime image holds every file of the operator's graph, the CRD data too", async () => {
  const files = await operatorFiles();
  assert.ok(files.includes("data/upstream/keda/crds.json"), "the graph holds the text imports");
  assert.ok(files.length > 50, `only ${files.length} files: not the operator's graph`);
  assert.deepEqual(notInImage(files, await dockerfileStages()), []);
});

Deno.test("the build stage prunes src/ and data/ to the operator's graph: the image carries nothing else", async () => {
  const build = (await dockerfileStages()).get("build")!;
  const runs = build.filter((l) => l.startsWith("RUN "));
  const prune = runs.findIndex((l) => /deploy\/operator\/prune\.ts"\]$/.test(l));
  assert.ok(prune > runs.findIndex((l) => l.includes('"install"')), "prunes after deno install");
  // Only the caches are sealed after it (seal_cache.ts), which touches neither src/ nor data/.
  assert.deepEqual(runs.slice(prune + 1).map((l) => /deploy\/operator\/[a-z_]+\.ts/.exec(l)?.[0]), [
    "deploy/operator/seal_cache.ts",
  ]);
  const copy = await Deno.makeTempDir({ prefix: "prune-" });
  try {
    for (const p of ["deno.json", "deno.lock", "src", "data", "deploy"]) {
      await new Deno.Command("cp", { args: ["-r", `${ROOT}${p}`, copy] }).output();
    }
    const run = await new Deno.Command(Deno.execPath(), {
      args: JSON.parse(runs[prune].slice("RUN ".length)).slice(1),
      cwd: copy,
    }).output();
    assert.ok(run.success, new TextDecoder().decode(run.stderr));
    const left: string[] = [];
    for (const dir of ["src", "data"]) {
      const find = await new Deno.Command("find", { args: [dir, "-type", "f"], cwd: copy })
        .output();
      left.push(...new TextDecoder().decode(find.stdout).split("\n").filter((l) => l));
    }
    const files = await operatorFiles();
    assert.deepEqual(left.sort(), files.filter((f) => /^(src|data)\//.test(f)).sort());
    assert.ok(!left.includes("src/cli/ratelimit/mod.ts"), "the preview is not the operator's");
  } finally {
    await Deno.remove(copy, { recursive: true });
  }
});

Deno.test("the image check finds a file the build or the image leaves out", () => {
  const stages = new Map([
    ["build", ["FROM x AS build", "COPY src/ src/", "COPY data/a/ data/a/"]],
    ["deno-runtime", ["FROM y AS deno-runtime", "COPY --from=build /app/src/ /app/src/"]],
  ]);
  assert.deepEqual(
    notInImage(["src/a.ts", "data/a/crds.json", "data/b/crds.json"], stages),
    ["data/a/crds.json", "data/b/crds.json"],
  );
});

Deno.test("a module's preload imports its CRD data with no read permission (the image grants none for /app)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "preload-" });
  try {
    const script = `${dir}/preload.ts`;
    const crds = pathToFileURL(`${ROOT}src/controllers/embedded_crds.ts`).href;
    await Deno.writeTextFile(
      script,
      `import { FUNCTION_CRDS, KEDA_CRDS } from ${JSON.stringify(crds)};\n` +
        "const all = await Promise.all([KEDA_CRDS.load(), FUNCTION_CRDS.load()]);\n" +
        "console.log(all.map((c) => c.length).join(' '));\n",
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--frozen",
        "--cached-only",
        "--no-prompt",
        "--config=deploy/operator/deno.json",
        "--allow-read=/var/run/secrets/kubernetes.io/serviceaccount",
        script,
      ],
      cwd: ROOT,
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
    assert.equal(text.trim(), "6 1");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
