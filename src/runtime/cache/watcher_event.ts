/** What a watcher tells its store: the one vocabulary the two halves of a watch cache share. */
import type { KubeObject } from "../../api/object.ts";

/** What a watcher tells its store (kube-rs `watcher::Event`). */
export type WatcherEvent =
  /** A (re)list starts; the following init-apply events are its whole result. */
  | { type: "init" }
  | { type: "init-apply"; object: KubeObject }
  /** The (re)list (at `resourceVersion`) is complete: the store now holds what it listed. */
  | { type: "init-done"; resourceVersion?: string }
  /** The type is not served (its CRD is missing): the store is empty and synced, but not live. */
  | { type: "missing" }
  | { type: "apply"; object: KubeObject }
  | { type: "delete"; object: KubeObject };
