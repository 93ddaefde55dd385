/**
 * What the status-carrying objects (Serverless, Scaler, RateLimit) went through in a run: each
 * status in order, the labels at each generation, and a `status` trace entry at every change.
 * Scenario expectations and the oracle read it after the run.
 */
import type { Condition } from "../src/api/common.ts";
import type { Change } from "./cluster/mod.ts";
import { STATUS_TABLES } from "./invariants.ts";
import { offset, type Trace } from "./trace.ts";

/** The statuses and generation labels of a run's status-carrying objects. */
export class StatusRecord {
  /** Every status each Serverless, Scaler and RateLimit had, by `Kind namespace/name`, in order. */
  readonly history = new Map<string, unknown[]>();
  /** The labels each of those objects had at each generation, by `uid/generation`. */
  readonly generationLabels = new Map<string, Record<string, string>>();

  /** Records a committed change (others than those kinds are ignored), tracing it at `now`. */
  observe(c: Change, trace: Trace, now: number): void {
    const kind = c.rtype.kind;
    if (!STATUS_TABLES.some((s) => s.type.kind === kind)) return;
    if (c.type !== "DELETED") {
      const { uid, generation, labels } = c.object.metadata;
      this.generationLabels.set(`${uid}/${generation}`, { ...(labels ?? {}) });
    }
    // The same status object (a write that kept it, shared by the store) reads the same.
    if (c.type !== "DELETED" && c.old?.status === c.object.status) return;
    const before = JSON.stringify(c.old?.status ?? null);
    const after = c.type === "DELETED" ? "deleted" : JSON.stringify(c.object.status ?? null);
    if (before === after) return;
    const status = c.object.status as
      | { state?: string; served?: string; conditions?: Condition[] }
      | undefined;
    const { namespace, name } = c.object.metadata;
    if (c.type !== "DELETED" && status) {
      const key = `${kind} ${namespace}/${name}`;
      this.history.set(key, [...(this.history.get(key) ?? []), status]);
    }
    trace.add({
      t: offset(now),
      event: "status",
      object: `${kind} ${namespace}/${name}`,
      ...(c.type === "DELETED" ? { state: "(deleted)" } : {}),
      ...(c.type !== "DELETED" && status?.state ? { state: status.state } : {}),
      ...(c.type !== "DELETED" && status?.served ? { served: status.served } : {}),
      conditions: c.type === "DELETED"
        ? []
        : (status?.conditions ?? []).map((x) => `${x.type}=${x.status}/${x.reason}`),
    });
  }
}
