/**
 * Issue #45 point 6, the simulator's half: what a real run of edits under faults did (the
 * RateLimits and Pods it started from, every edit it sent, the faults and when), turned into a
 * simulator scenario of the same sequence with the simulator's own equivalent faults, and the
 * RateLimits' final statuses of both, compared as the differential test compares them
 * (tests/e2e/finals.ts).
 */
import type { KubeObject } from "../../src/api/object.ts";
import { type Scenario, ScenarioSchema } from "../../sim/scenario/format.ts";
import type { EditSent } from "./faults_deployed.ts";
import { type Finals, withoutAccepted } from "./finals.ts";

/** A fault of the real run: when it began (ms from the load's start) and how long it lasted. */
export interface RunFault {
  kind: "partition" | "apiServerRestart" | "etcdRestart" | "compaction";
  at: number;
  forMs: number;
}

/** What a real run did, enough to run the same sequence on the simulator. */
export interface LoadRecord {
  namespace: string;
  /** The mesh Pods the RateLimits select, as created (server-set fields left out). */
  pods: KubeObject[];
  /** The RateLimits as created, before any edit. */
  rateLimits: KubeObject[];
  /** Every edit the load sent, `at` counted from the load's start. */
  edits: EditSent[];
  faults: RunFault[];
  /** Each RateLimit's default bucket `maxTokens` in its final spec, as the API server holds it. */
  finalMaxTokens: Record<string, number>;
}

/** Virtual time at which the recorded load starts: the RateLimits created at 0 have settled. */
export const LOAD_START_MS = 5 * 60_000;

/** The kinds whose watch history a compaction takes from the operator (what it watches for RateLimits). */
const COMPACTED = ["RateLimit", "EnvoyFilter", "Pod"];

/** `o`'s default bucket's `maxTokens`. */
export function maxTokensOf(o: KubeObject): number | undefined {
  const spec = o.spec as { local?: { defaultBucket?: { maxTokens?: number } } } | undefined;
  return spec?.local?.defaultBucket?.maxTokens;
}

/** `rl` with its default bucket's `maxTokens` set to `maxTokens` (a copy). */
export function withMaxTokens(rl: KubeObject, maxTokens: number): KubeObject {
  const copy = structuredClone(rl);
  const local = (copy.spec as { local: { defaultBucket: { maxTokens: number } } }).local;
  local.defaultBucket.maxTokens = maxTokens;
  return copy;
}

/**
 * The edits that made each RateLimit's final spec, in the order sent: every accepted one, and an
 * unanswered one whose value is the final spec's (it landed although its answer was lost). Throws
 * when a final spec is the result of no edit sent; `landedUnanswered` counts those taken in.
 */
export function resolveEdits(rec: LoadRecord): { edits: EditSent[]; landedUnanswered: number } {
  const initial = new Map(rec.rateLimits.map((o) => [o.metadata.name, maxTokensOf(o)]));
  const out = rec.edits.filter((e) => e.ok);
  let landedUnanswered = 0;
  for (const [name, final] of Object.entries(rec.finalMaxTokens)) {
    const last = out.findLast((e) => e.name === name)?.maxTokens ?? initial.get(name);
    if (last === final) continue;
    const landed = rec.edits.find((e) => !e.ok && e.name === name && e.maxTokens === final);
    if (!landed) {
      throw new Error(
        `${name}: its final maxTokens ${final} is neither the last accepted edit's (${last}) nor ` +
          `an unanswered edit's`,
      );
    }
    out.push(landed);
    landedUnanswered++;
  }
  out.sort((a, b) => a.at - b.at);
  return { edits: out, landedUnanswered };
}

/** The simulator's equivalent of one fault of the real run, as a scenario step writes it. */
export function simFaults(f: RunFault): Record<string, unknown>[] {
  const forMs = `${Math.max(1, Math.round(f.forMs))}ms`;
  switch (f.kind) {
    case "partition":
      return [{ kind: "partition", for: forMs }];
    case "apiServerRestart":
      return [{ kind: "apiServerDown", for: forMs, watches: "drop" }];
    case "etcdRestart":
      return [{ kind: "apiServerDown", for: forMs, watches: "keep" }];
    case "compaction":
      return COMPACTED.map((kind) => ({ kind: "compact", target: { kind } }));
  }
}

/**
 * The scenario of a real run: at 0 the namespace, the Pods and the RateLimits as created; from
 * {@link LOAD_START_MS} on, each edit that made the final specs ({@link resolveEdits}) at the time
 * it was sent, and each fault as the simulator's equivalent ({@link simFaults}) at the time it
 * began; two replicas (one standby), no random fault.
 */
export function loadScenario(
  rec: LoadRecord,
  name = "edits under faults, from a real run",
): Scenario {
  const byName = new Map(rec.rateLimits.map((o) => [o.metadata.name, o]));
  const at = (ms: number) => `${Math.round(LOAD_START_MS + ms)}ms`;
  const events: { ms: number; step: Record<string, unknown> }[] = [];
  for (const f of rec.faults) events.push({ ms: f.at, step: { fault: simFaults(f) } });
  for (const e of resolveEdits(rec).edits) {
    const rl = byName.get(e.name);
    if (!rl) throw new Error(`an edit of ${e.name}, which the run did not create`);
    events.push({ ms: e.at, step: { apply: [withMaxTokens(rl, e.maxTokens)] } });
  }
  // Stable: a fault and an edit at the same millisecond keep the fault first.
  events.sort((a, b) => a.ms - b.ms);
  const namespace = { apiVersion: "v1", kind: "Namespace", metadata: { name: rec.namespace } };
  const steps = [
    { at: "0s", apply: [namespace, ...rec.pods, ...rec.rateLimits] },
    ...events.map((e) => ({ at: at(e.ms), ...e.step })),
  ];
  return ScenarioSchema.parse({ name, faults: { standbys: 1 }, steps });
}

/** A Pod as the simulator is to be given it: its name, labels, annotations, node and containers. */
export function podAsCreated(p: KubeObject): KubeObject {
  const spec = (p.spec ?? {}) as {
    nodeName?: string;
    containers?: { name: string; image: string }[];
  };
  const { name, namespace, labels, annotations } = p.metadata;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
    },
    spec: {
      ...(spec.nodeName ? { nodeName: spec.nodeName } : {}),
      containers: (spec.containers ?? []).map((c) => ({ name: c.name, image: c.image })),
    },
  };
}

/**
 * The RateLimits' final statuses of `f`, without their `Accepted` conditions: the real run has no
 * istiod to ask while the simulator models one (finals.ts `withoutAccepted`).
 */
export function rateLimitFinals(f: Finals): Finals {
  return withoutAccepted(
    Object.fromEntries(Object.entries(f).filter(([k]) => k.startsWith("RateLimit "))),
    false,
  );
}
