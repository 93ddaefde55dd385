/** Well-known paths of the local control plane tooling. */
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Directory holding this tool's sources (`tools/cluster`). */
export const TOOL_DIR: string = import.meta.dirname ??
  fileURLToPath(new URL(".", import.meta.url));

/** Root of the repository. */
export const REPO_ROOT: string = resolve(TOOL_DIR, "..", "..");

/** Go wrapper modules (`tools/cluster/go`). */
export const GO_DIR: string = join(TOOL_DIR, "go");

/** Cache root: `CLUSTER_CACHE_DIR` or `<repo>/.cache/cluster`. */
export const CACHE_DIR: string = Deno.env.get("CLUSTER_CACHE_DIR") ??
  join(REPO_ROOT, ".cache", "cluster");

/** Directory holding the built binaries and their version stamp. */
export const BIN_DIR: string = join(CACHE_DIR, "bin");

/** Default cluster directory used by the CLI. */
export const DEFAULT_CLUSTER_DIR: string = join(CACHE_DIR, "default");
