/**
 * The deno-runtime image runs the operator's module graph from /app: every repository file that
 * graph reaches, the data files a module's preload imports among them, is copied into the build
 * stage and from it into the image (the compiled binary embeds the same graph:
 * tests/architecture/runtime_graph_test.ts).
 */
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";
import { denoInfo } from "../architecture/layers.ts";
import { dockerfileStages } from "./dockerfile.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The repository files (relative paths) of the operator's graph, dynamic and text imports too. */
async function operatorFiles(): Promise<string[]> {
  const entry = pathToFileURL(`${ROOT}src/cli/operator_main.ts`).href;
  const graph = await denoInfo(entry, ROOT) as { modules: { specifier: string }[] };
  const root = pathToFileURL(ROOT).href;
  return graph.modules.map((m) => m.specifier).filter((s) => s.startsWith(root)).map((s) =>
    s.slice(root.length)
  );
}

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
