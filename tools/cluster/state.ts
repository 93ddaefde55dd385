/** The `state.json` file of a cluster directory: pids, ports and paths of a running cluster. */
import { join } from "node:path";
import type { ComponentName, ComponentSpec, Ports } from "./components.ts";
import type { RealNodeState } from "./node/state.ts";
import type { IstiodState } from "./istiod.ts";

/** A started component. */
export interface ComponentState extends ComponentSpec {
  pid: number;
}

/** Contents of `DIR/state.json`. */
export interface ClusterState {
  dir: string;
  server: string;
  etcdDataDir: string;
  ports: Ports;
  caCert: string;
  kubectl: string;
  startedAt: string;
  components: ComponentState[];
  /** The node with kubelet and containerd, when started with `realNode`. */
  realNode?: RealNodeState;
  /** istiod (pilot-discovery), when started with `mesh`. */
  istiod?: IstiodState;
}

/** Path of the state file of `dir`. */
export function statePath(dir: string): string {
  return join(dir, "state.json");
}

/** Reads the state of `dir`, or null when there is none. */
export async function readState(dir: string): Promise<ClusterState | null> {
  try {
    return JSON.parse(await Deno.readTextFile(statePath(dir))) as ClusterState;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/** Writes the state of `state.dir` atomically. */
export async function writeState(state: ClusterState): Promise<void> {
  const tmp = statePath(state.dir) + ".tmp";
  await Deno.writeTextFile(tmp, JSON.stringify(state, null, 2) + "\n");
  await Deno.rename(tmp, statePath(state.dir));
}

/** The state entry of component `name`. */
export function component(state: ClusterState, name: ComponentName): ComponentState {
  const c = state.components.find((x) => x.name === name);
  if (!c) throw new Error(`component ${name} not in ${statePath(state.dir)}`);
  return c;
}
