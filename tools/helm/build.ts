/**
 * Builds `helm` (helm.sh/helm/v3/cmd/helm, pinned by the wrapper module in `go/`) into
 * `.cache/helm/` with the stamp and lock of tools/gobuild.ts: it lints and renders the chart that
 * `deno task deploy` generates, and installs it in one end-to-end test.
 *
 *   ./deno task build --only=helm
 *
 * @module
 */
import { resolve } from "node:path";
import { type GoBuild, GoCache, goEnv } from "../gobuild.ts";
import type { Log } from "../progress.ts";

const GO_DIR = resolve(import.meta.dirname ?? ".", "go");
const BIN_DIR = resolve(import.meta.dirname ?? ".", "..", "..", ".cache", "helm");
const cache = new GoCache(BIN_DIR);

/** The build of `helm` from the wrapper module. */
export function helmBuild(): GoBuild {
  const ldflags = "-s -w";
  return {
    name: "helm",
    label: "helm (helm.sh/helm/v3)",
    dir: GO_DIR,
    inputs: ["go.mod", "go.sum", "tools.go"],
    extra: [goEnv(), ldflags],
    packages: ["helm.sh/helm/v3/cmd/helm"],
    outputs: ["helm"],
    ldflags,
  };
}

/** The path of an up-to-date `helm`, built first when needed. */
export async function ensureHelm(log: Log = () => {}): Promise<string> {
  await cache.ensure([helmBuild()], log);
  return cache.path("helm");
}
