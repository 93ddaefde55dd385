/**
 * A floor program for start-up: Deno doing what the operator must do before its first reconcile,
 * and nothing else. It lists the paths in FLOOR_WATCHES at once over one HTTP/2 client, page by
 * page as the operator's watches list (FLOOR_PAGE_SIZE a page), parses every page, and prints the
 * time (ms since the epoch) at which the last page was parsed. None of the operator's code runs:
 * not its module graph, Lease, cluster checks or caches (floor_env.ts: how it reaches the server).
 */
import { floorEnv as env, floorServer } from "./floor_env.ts";

const floor = floorServer();
const { server } = floor;
const client = Deno.createHttpClient({ caCerts: floor.caCerts });
const headers = { ...floor.headers, accept: "application/json" };
const pageSize = Number(env("FLOOR_PAGE_SIZE"));

/** Every page of one collection; an optional type whose CRD is absent answers 404 and has none. */
async function listAll(path: string): Promise<number> {
  let items = 0;
  let next: string | undefined = "";
  while (next !== undefined) {
    const query: string = `limit=${pageSize}${next ? `&continue=${encodeURIComponent(next)}` : ""}`;
    const res: Response = await fetch(`${server}${path}${path.includes("?") ? "&" : "?"}${query}`, {
      client,
      headers,
    });
    if (res.status === 404) {
      await res.body?.cancel();
      return items;
    }
    if (!res.ok) throw new Error(`floor: list ${path}: ${res.status} ${await res.text()}`);
    const page: { items: unknown[]; metadata: { continue?: string } } = await res.json();
    items += page.items.length;
    next = page.metadata.continue || undefined;
  }
  return items;
}

await Promise.all(env("FLOOR_WATCHES").split(" ").map(listAll));
console.log(Date.now());
