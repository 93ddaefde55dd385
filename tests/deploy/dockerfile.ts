/** The project's Dockerfile read as the deploy tests check it. */

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
