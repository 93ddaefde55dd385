/**
 * Leaves in src/ and data/ only the files of the operator's module graph (static, dynamic and text
 * imports, as `deno info` reports them), so that the deno-runtime image carries what the operator
 * imports and nothing else: not the CLI's generators, the RateLimit preview or the Helm chart
 * renderer. The image's build stage runs it after `deno install`; the compiled binary embeds the
 * same graph by construction.
 *
 * `deno run --allow-read=. --allow-write=src,data --allow-run deploy/operator/prune.ts` in /app.
 */
import { join, relative } from "node:path";

const ROOT = new URL("../../", import.meta.url).pathname;
const PRUNED = ["src", "data"];

/** The repository files (relative paths) of the operator's graph. */
async function graphFiles(): Promise<Set<string>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "info",
      "--json",
      "--frozen",
      "--config",
      "deploy/operator/deno.json",
      "src/cli/operator_main.ts",
    ],
    cwd: ROOT,
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error("deno info failed");
  const graph = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string }[];
  };
  const root = new URL(`file://${ROOT}`).href;
  return new Set(
    graph.modules.map((m) => m.specifier).filter((s) => s.startsWith(root)).map((s) =>
      decodeURIComponent(s.slice(root.length))
    ),
  );
}

/** Removes what `keep` lacks under `dir`; true when `dir` is left empty (and removed). */
async function prune(dir: string, keep: Set<string>, removed: string[]): Promise<boolean> {
  let left = 0;
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    const rel = relative(ROOT, path);
    if (e.isDirectory ? await prune(path, keep, removed) : !keep.has(rel)) {
      if (!e.isDirectory) {
        await Deno.remove(path);
        removed.push(rel);
      }
    } else left++;
  }
  if (left === 0) await Deno.remove(dir);
  return left === 0;
}

if (import.meta.main) {
  const keep = await graphFiles();
  const removed: string[] = [];
  for (const d of PRUNED) await prune(join(ROOT, d), keep, removed);
  console.log(`kept the ${keep.size} files of the operator's graph; removed ${removed.length}`);
}
