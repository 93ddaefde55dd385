/** The project's Dockerfile read as the deploy tests check it, and the graph the image must carry. */
import { pathToFileURL } from "node:url";
import { denoInfo } from "../architecture/layers.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The Dockerfile's instructions (comments and blank lines dropped), by stage name ("" before the first FROM). */
export async function dockerfileStages(): Promise<Map<string, string[]>> {
  const docker = await Deno.readTextFile(`${ROOT}Dockerfile`);
  const stages = new Map<string, string[]>([["", []]]);
  let current = stages.get("")!;
  for (const l of docker.split("\n").filter((l) => l.trim() && !l.trim().startsWith("#"))) {
    const from = /^FROM \S+ AS (\S+)$/.exec(l);
    if (from) stages.set(from[1], current = []);
    current.push(l);
  }
  return stages;
}

/** The repository files (relative paths) of the operator's graph, dynamic and text imports too. */
export async function operatorFiles(): Promise<string[]> {
  const entry = pathToFileURL(`${ROOT}src/cli/operator_main.ts`).href;
  const graph = await denoInfo(entry, ROOT) as { modules: { specifier: string }[] };
  const root = pathToFileURL(ROOT).href;
  return graph.modules.map((m) => m.specifier).filter((s) => s.startsWith(root)).map((s) =>
    s.slice(root.length)
  );
}
