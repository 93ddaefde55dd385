/** What `state.json` records of a cluster's real node, so `down` can stop and clean it. */
import type { ProcessSpec } from "../../processes.ts";
import type { PodNetwork } from "./cni.ts";
import type { HostPrograms } from "./layout.ts";

/** A started process of the node. */
export interface NodeProcess extends ProcessSpec {
  pid: number;
  health?: string;
}

/** The real node of a cluster; fields fill in as it starts, so a failed start is cleaned too. */
export interface RealNodeState {
  /** Node name, also `kubectl get node <name>`. */
  name: string;
  clusterDir: string;
  programs: HostPrograms;
  net?: PodNetwork;
  containerd?: NodeProcess;
  kubelet?: NodeProcess;
  /** Passes the `kubernetes` Service's endpoint on the bridge to the API server (proxy.ts). */
  apiRelay?: NodeProcess;
  kubeProxy?: NodeProcess;
  /** Image references loaded at start (the sandbox image among them). */
  images: string[];
}
