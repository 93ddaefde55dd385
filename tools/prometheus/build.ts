/**
 * Builds Prometheus's `promtool` (checks the alert rules and runs their unit tests) and
 * `prometheus` (the e2e test's server) from the Go module pinned in `go/`, each a build of its own
 * into `.cache/prometheus/` with the stamp and lock of tools/gobuild.ts. The `remove_all_sd` tag
 * leaves out every service discovery but file and HTTP (the test scrapes a static target); the web
 * UI's assets are not embedded (Prometheus builds them only with `builtinassets`).
 *
 *   ./deno task build --only=promtool,prometheus
 *
 * @module
 */
import { join, resolve } from "node:path";
import { type GoBuild, GoCache, goEnv } from "../gobuild.ts";
import type { Log } from "../progress.ts";

const GO_DIR = resolve(import.meta.dirname ?? ".", "go");
const BIN_DIR = resolve(import.meta.dirname ?? ".", "..", "..", ".cache", "prometheus");
const MODULE = "github.com/prometheus/prometheus";
const TAGS = ["remove_all_sd"];

/** The version the wrapper module pins (`v0.316.0` is Prometheus 3.16.0). */
export async function prometheusModuleVersion(): Promise<string> {
  const gomod = await Deno.readTextFile(join(GO_DIR, "go.mod"));
  const m = gomod.match(/^require github\.com\/prometheus\/prometheus (v\S+)/m);
  if (!m) throw new Error(`no "require ${MODULE}" in ${GO_DIR}/go.mod`);
  return m[1];
}

/** The build of `promtool` or `prometheus` from the wrapper module. */
export function prometheusBuild(cmd: "promtool" | "prometheus"): GoBuild {
  const ldflags = "-s -w";
  return {
    name: cmd,
    label: `${cmd} (${MODULE})`,
    dir: GO_DIR,
    inputs: ["go.mod", "go.sum", "tools.go"],
    extra: [goEnv(), ldflags, TAGS],
    packages: [`${MODULE}/cmd/${cmd}`],
    outputs: [cmd],
    ldflags,
    tags: TAGS,
  };
}

const cache = new GoCache(BIN_DIR);

/** The path of an up-to-date `promtool`, built first when needed. */
export async function ensurePromtool(log: Log = () => {}): Promise<string> {
  await cache.ensure([prometheusBuild("promtool")], log);
  return cache.path("promtool");
}

/** The path of an up-to-date `prometheus`, built first when needed. */
export async function ensurePrometheus(log: Log = () => {}): Promise<string> {
  await cache.ensure([prometheusBuild("prometheus")], log);
  return cache.path("prometheus");
}
