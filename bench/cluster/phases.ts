/**
 * The measurements of the control-plane benches, each made the same way for every subject (the
 * operator, the peer) and, for convergence, for the baseline client: time from creation to all
 * Ready, CPU seconds, API writes at rest, resident memory, start-up.
 */
import type { KubeObject } from "../../src/api/object.ts";
import { type AuditEvent, OPERATOR_USER } from "../../tools/cluster/mod.ts";
import { podManifest, rateLimitObject } from "../fixtures.ts";
import { fmt } from "../stats.ts";
import { BaselineProcess } from "./baseline_process.ts";
import { DEFAULT_CONCURRENCY } from "../../src/runtime/mod.ts";
import type { BenchCluster } from "./env.ts";
import { cpuSeconds } from "./operator.ts";
import { KYMA_RATELIMIT } from "./peer.ts";
import { ReadyWatch } from "./ready.ts";
import type { Running, Subject } from "./subject.ts";

/** RateLimits (and their Pods) a namespace holds when a size is spread over namespaces. */
export const PER_NAMESPACE = 1_000;

/** Pods and RateLimits (of `subject`'s type), interleaved so both kinds arrive together. */
export function workload(
  count: number,
  rules: number,
  namespace: string,
  type = undefined as Subject["type"] | undefined,
): KubeObject[] {
  return Array.from({ length: count }, (_, i) => [
    podManifest(i, namespace),
    rateLimitObject({ i, rules, namespace, ...(type ? { type } : {}) }),
  ]).flat();
}

/** The namespaces `count` RateLimits take: one, or as many as PER_NAMESPACE a namespace. */
export function layout(prefix: string, count: number, spread: boolean): [string, number][] {
  if (!spread || count <= PER_NAMESPACE) return [[prefix, count]];
  return Array.from({ length: Math.ceil(count / PER_NAMESPACE) }, (_, k) => [
    `${prefix}-${k}`,
    Math.min(PER_NAMESPACE, count - k * PER_NAMESPACE),
  ]);
}

/** What a convergence took. */
export interface Converged {
  /** Creation start to the last RateLimit Ready. */
  ms: number;
  /** Creating the objects alone. */
  createdMs: number;
  /** CPU seconds the subject (or the baseline process) used meanwhile. */
  cpuS?: number;
  /** The writes its user made from creation start until they stopped, Events included. */
  writes: ConvergeWrites;
}

/** The writes of a convergence, from the audit log. */
export interface ConvergeWrites {
  /** Every write (Lease renewals apart). */
  total: number;
  /** `total` over the RateLimits created. */
  perObject: number;
  /** Of which Events. */
  events: number;
  /**
   * Of the Events, those the API server received before the user's last status write: Events
   * that competed with the writes that make limits take effect (issue 46).
   */
  eventsBeforeLastStatus: number;
  /** By verb and resource (`writesByResource`). */
  byResource: string;
}

/** How long the audit log must show no new write of a user before its writes are counted. */
const WRITES_SETTLE_MS = 2_000;

/**
 * The writes `user` made since `sinceMs`, once they stopped coming (Events are written after the
 * objects, in the background): counted when no new one came for WRITES_SETTLE_MS, at most
 * `boundMs` after the call.
 */
export async function writesUntilQuiet(
  env: BenchCluster,
  user: string,
  sinceMs: number,
  objects: number,
  boundMs = 60_000,
): Promise<ConvergeWrites> {
  const deadline = Date.now() + boundMs;
  let seen = -1;
  let writes: AuditEvent[] = [];
  for (;;) {
    writes = (await env.handle.writes({ user, sinceMs }))
      .filter((w) => w.objectRef?.resource !== "leases");
    if (writes.length === seen || Date.now() > deadline) break;
    seen = writes.length;
    await new Promise((r) => setTimeout(r, WRITES_SETTLE_MS));
  }
  return convergeWrites(writes, objects);
}

/** The figures of a convergence's `writes` (one user's, Lease renewals apart) for `objects`. */
export function convergeWrites(writes: readonly AuditEvent[], objects: number): ConvergeWrites {
  const events = writes.filter((w) => w.objectRef?.resource === "events");
  const statuses = writes.filter((w) => w.objectRef?.subresource === "status")
    .map((w) => Date.parse(w.requestReceivedTimestamp));
  const lastStatus = statuses.length > 0 ? Math.max(...statuses) : -Infinity;
  return {
    total: writes.length,
    perObject: writes.length / Math.max(1, objects),
    events: events.length,
    eventsBeforeLastStatus: events
      .filter((w) => Date.parse(w.requestReceivedTimestamp) < lastStatus).length,
    byResource: writesByResource(writes),
  };
}

/** `3.02 writes an object (patch envoyfilters ×1,000, …)`. */
export function writesNote(w: ConvergeWrites): string {
  return `${fmt(w.perObject, 2)} writes an object, Events included (${w.byResource})` +
    (w.events > 0
      ? `; ${fmt(w.eventsBeforeLastStatus)} of its ${fmt(w.events)} Events sent before its last ` +
        "status write"
      : "");
}

/**
 * Creates `count` RateLimits and their Pods over `namespaces` (made here) and times until all are
 * Ready. With `subject` running: its CPU is read at the start and at all Ready; without, the
 * baseline client makes the writes, as a process of its own (baseline_process.ts) on its own
 * connection, as the operator's user, with the operator's concurrency. Either way the writes of
 * its user are counted from the audit log, Events included.
 */
export async function converge(
  env: BenchCluster,
  namespaces: [string, number][],
  rules: number,
  width: number,
  subject?: { s: Subject; r: Running },
): Promise<Converged> {
  const type = subject?.s.type;
  const watches: ReadyWatch[] = [];
  const objects: KubeObject[] = [];
  for (const [ns, n] of namespaces) {
    await env.namespace(ns);
    const w = new ReadyWatch(env.api, ns, type);
    await w.start();
    watches.push(w);
    objects.push(...workload(n, rules, ns, type));
  }
  const baseline = subject ? undefined : await BaselineProcess.start({
    kubeconfig: env.handle.operatorKubeconfig,
    namespaces,
    rules,
    // The operator's reconciles at once, so both make their writes as many at a time.
    width: DEFAULT_CONCURRENCY,
  });
  try {
    const pid = subject?.r.pid ?? baseline!.pid;
    const cpu0 = await cpuSeconds(pid);
    const t0 = Date.now();
    const createdMs = await env.createAll(objects, width, type === KYMA_RATELIMIT ? [type] : []);
    let last = 0;
    for (const [k, w] of watches.entries()) {
      last = Math.max(last, await w.whenReady(namespaces[k][1], 3_600_000));
    }
    const cpuS = await cpuSeconds(pid) - cpu0;
    await baseline?.done();
    await Promise.all(watches.map((w) => w.stop()));
    const count = namespaces.reduce((a, [, n]) => a + n, 0);
    const writes = await writesUntilQuiet(env, subject?.s.user ?? OPERATOR_USER, t0, count);
    return { ms: last - t0, createdMs, cpuS, writes };
  } catch (err) {
    await baseline?.kill();
    throw err;
  }
}

/** API writes a subject made in a window at rest, Lease renewals apart. */
export interface Rest {
  writes: number;
  leases: number;
  byResource: string;
}

/** Writes counted by verb and resource: `patch ratelimits/status ×3, create events ×1`. */
export function writesByResource(writes: readonly AuditEvent[]): string {
  const byResource = new Map<string, number>();
  for (const w of writes) {
    const k = `${w.verb} ${w.objectRef?.resource ?? "?"}${
      w.objectRef?.subresource ? `/${w.objectRef.subresource}` : ""
    }`;
    byResource.set(k, (byResource.get(k) ?? 0) + 1);
  }
  return [...byResource].map(([k, v]) => `${k} ×${fmt(v)}`).join(", ");
}

/** Counts the writes of `subject`'s user (audit log) over `ms` of rest. */
export async function atRest(env: BenchCluster, subject: Subject, ms: number): Promise<Rest> {
  const since = Date.now();
  await new Promise((r) => setTimeout(r, ms));
  const writes = await env.handle.writes({ user: subject.user, sinceMs: since });
  const leases = writes.filter((w) => w.objectRef?.resource === "leases");
  const other = writes.filter((w) => w.objectRef?.resource !== "leases");
  return { writes: other.length, leases: leases.length, byResource: writesByResource(other) };
}
