/**
 * What `deno task dev` is asked before it starts anything: its help, its own flag and the
 * operator's (checked now, not after minutes of start-up), and whether another `dev` already runs
 * (one lock for the one default cluster: a second `dev` would tear down the first one's cluster
 * under its running operator).
 */
import { join, relative } from "node:path";
import { parseRunFlags } from "../src/cli/run_flags.ts";
import { usageError, usageLine } from "../src/cli/usage.ts";
import { CACHE_DIR, DEFAULT_CLUSTER_DIR } from "./cluster/paths.ts";

/** How `dev` is named in its usage line and hints. */
export const DEV_PROGRAM = "deno task dev";

/** The help of `dev`. */
export const DEV_HELP = `${usageLine(DEV_PROGRAM, "[--real-node] [operator flags]")}

Builds the local control plane from Go modules (the first time only: minutes), starts it in
.cache/cluster/default, installs crds/, runs the operator in the foreground (its JSON logs on
stdout), applies samples/ and prints kubectl lines to try. Ctrl-C (or SIGTERM) stops the operator
and the cluster and removes the cluster's data. One dev runs at a time: a second one refuses.

Options:
  --real-node     also start a node where Pods really run (needs root; tools/cluster/README.md)
  --mesh          also run a real istiod (pilot-discovery, built from the pinned istio.io/istio)
                  with Istio's own CRDs, on loopback ports (docs/istiod.md)
  -h, --help      show this help
  operator flags  passed to the operator: see \`./deno run -A mod.ts run --help\``;

/** The lock that one `dev` holds while it runs. */
export const DEV_LOCK: string = join(CACHE_DIR, "dev.lock");

/** What `dev` was asked: help, a run, or a usage error (its line). */
export type DevArgs =
  | { kind: "help" }
  | { kind: "run"; realNode: boolean; mesh: boolean; operatorArgs: string[] }
  | { kind: "error"; line: string };

/** `dev`'s own flags; every other argument is the operator's. */
const DEV_FLAGS = ["--real-node", "--mesh"];

/** Reads `dev`'s arguments; the operator's flags are checked as the operator would check them. */
export function parseDevArgs(args: readonly string[]): DevArgs {
  if (args.includes("-h") || args.includes("--help")) return { kind: "help" };
  const operatorArgs = args.filter((a) => !DEV_FLAGS.includes(a));
  const checked = parseRunFlags(operatorArgs, () => undefined);
  if (checked.kind === "error") {
    return { kind: "error", line: usageError(DEV_PROGRAM, `operator flags: ${checked.message}`) };
  }
  return {
    kind: "run",
    realNode: args.includes("--real-node"),
    mesh: args.includes("--mesh"),
    operatorArgs,
  };
}

/** Why a second `dev` does not start: who runs, and how to stop it. */
export function busyMessage(owner: number): string {
  const who = owner > 0 ? `pid ${owner}` : "a process that is still starting";
  const dir = relative(Deno.cwd(), DEFAULT_CLUSTER_DIR) || DEFAULT_CLUSTER_DIR;
  const kill = owner > 0 ? ` or \`kill ${owner}\`` : "";
  return `another \`${DEV_PROGRAM}\` runs the cluster in ${dir} (${who}); starting a second one ` +
    `would tear that cluster down under its operator. Stop the first with Ctrl-C in its ` +
    `terminal${kill} (it stops its operator and cluster), then start again.`;
}
