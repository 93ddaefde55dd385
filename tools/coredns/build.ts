/**
 * CoreDNS, the real node's cluster DNS, built from its Go module (`github.com/coredns/coredns`,
 * the version go.mod beside this file pins) with only the plugins main.go imports, into the real
 * node's binary cache (`.cache/cluster/bin`) as one more build of the node's (tools/cluster/node/
 * build.ts): `./deno task build --only=node` builds it with the kubelet.
 *
 * @module
 */
import { resolve } from "node:path";
import { type GoBuild, goEnv } from "../gobuild.ts";

/** The wrapper module's directory (`tools/coredns`). */
export const COREDNS_DIR: string = resolve(import.meta.dirname ?? ".");
/** The upstream module. */
export const COREDNS_MODULE = "github.com/coredns/coredns";
/** No symbol table or DWARF: run, never debugged, smaller. */
const LDFLAGS = "-s -w";

/** CoreDNS's version, as go.mod pins it (e.g. `v1.15.0`). */
export async function corednsVersion(): Promise<string> {
  const gomod = await Deno.readTextFile(resolve(COREDNS_DIR, "go.mod"));
  const m = /^\s*(?:require\s+)?github\.com\/coredns\/coredns (v\S+)/m.exec(gomod);
  if (!m) throw new Error(`${COREDNS_DIR}/go.mod requires no ${COREDNS_MODULE}`);
  return m[1];
}

/** The build of `coredns` (inputs: go.mod, go.sum, main.go). */
export async function corednsBuild(): Promise<GoBuild> {
  return {
    name: "coredns",
    label: `coredns (${COREDNS_MODULE} ${await corednsVersion()}, cluster DNS plugins only)`,
    dir: COREDNS_DIR,
    inputs: ["go.mod", "go.sum", "main.go"],
    extra: [goEnv(), LDFLAGS],
    packages: ["."],
    outputs: ["coredns"],
    ldflags: LDFLAGS,
  };
}
