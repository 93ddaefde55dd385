/**
 * The measurements of the control-plane benches, each made the same way for every subject (the
 * operator, the peer) and, for convergence, for the baseline client: time from creation to all
 * Ready, CPU seconds, API writes at rest, resident memory, start-up.
 */
import type { KubeObject } from "../../src/api/object.ts";
import type { AuditEvent } from "../../tools/cluster/mod.ts";
import { podManifest, rateLimitObject } from "../fixtures.ts";
import { fmt } from "../stats.ts";
import { baselinePayloads, runBaseline } from "./baseline.ts";
import type { BenchCluster } from "./env.ts";
import { cpuSeconds } from "./operator.ts";
import { KYMA_RATELIMIT } from "./peer.ts";
import { ReadyWatch } from "./ready.ts";
import type { Running, Subject } from "./subject.ts";

/** Reconciles of one controller at once: the operator's default, which the baseline matches. */
export const OPERATOR_CONCURRENCY = 2;

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
  /** CPU seconds the subject used meanwhile (undefined for the baseline, which runs in-process). */
  cpuS?: number;
}

/**
 * Creates `count` RateLimits and their Pods over `namespaces` (made here) and times until all are
 * Ready. With `subject` running: its CPU is read at the start and at all Ready; without, the
 * baseline client makes the writes.
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
  const stop = new AbortController();
  const baselines: Promise<number>[] = [];
  for (const [ns, n] of namespaces) {
    await env.namespace(ns);
    const w = new ReadyWatch(env.api, ns, type);
    await w.start();
    watches.push(w);
    objects.push(...workload(n, rules, ns, type));
    if (!subject) {
      const payloads = baselinePayloads(n, rules, ns);
      baselines.push(runBaseline(env.api, ns, payloads, OPERATOR_CONCURRENCY, stop.signal));
    }
  }
  const cpu0 = subject ? await cpuSeconds(subject.r.pid) : 0;
  const t0 = Date.now();
  const createdMs = await env.createAll(objects, width, type === KYMA_RATELIMIT ? [type] : []);
  let last = 0;
  for (const [k, w] of watches.entries()) {
    last = Math.max(last, await w.whenReady(namespaces[k][1], 3_600_000));
  }
  const cpuS = subject ? await cpuSeconds(subject.r.pid) - cpu0 : undefined;
  await Promise.all(baselines);
  await Promise.all(watches.map((w) => w.stop()));
  return { ms: last - t0, createdMs, ...(cpuS !== undefined ? { cpuS } : {}) };
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
