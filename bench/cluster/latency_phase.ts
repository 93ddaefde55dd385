/**
 * The latency phase of the control-plane benches: with `size` RateLimits Ready and the subject at
 * rest (as far as it rests: bounded, see idle.ts), one round after another creates one RateLimit
 * (on a Pod made beforehand), edits another's default bucket, and deletes the one just created,
 * each alone and spaced out, timed from the API write to watch events (latency.ts).
 */
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { fmt } from "../stats.ts";
import { podManifest, rateLimitObject, workloadName } from "../fixtures.ts";
import { type BenchCluster, retrying } from "./env.ts";
import { followRateLimits, type Seen } from "./follow.ts";
import { settle, type Settled } from "./idle.ts";
import {
  type Change,
  CHANGES,
  Changes,
  describe,
  type Sample,
  spread,
  timeChange,
} from "./latency.ts";
import { converge, layout } from "./phases.ts";
import type { Running, Subject } from "./subject.ts";

/** Sizes of the latency phase. */
export interface LatencyOptions {
  /** RateLimits Ready and at rest while single changes are timed. */
  size: number;
  /** Changes of each kind (create, edit, delete). */
  changes: number;
  /** Pause after each change is seen, so each meets a subject at rest. */
  spacingMs: number;
  /** The longest a change is waited for before it counts as not seen. */
  boundMs: number;
  rules: number;
  width: number;
}

/** What the phase measured for one subject. */
export interface LatencyRun {
  samples: Sample[];
  /** Whether the subject was idle before the first change. */
  rest: Settled;
  /** Wall time of the timed rounds. */
  ms: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the phase for one running subject in namespace `ns` (made here, left for the caller). */
export async function latencyPhase(
  env: BenchCluster,
  subject: Subject,
  r: Running,
  ns: string,
  o: LatencyOptions,
): Promise<LatencyRun> {
  await converge(env, layout(ns, o.size, false), o.rules, o.width, { s: subject, r });
  // The Pods of the RateLimits to create, made now so that creating them is all a change does.
  // One more for an untimed first round: the cluster's garbage collector, which removes an
  // EnvoyFilter after its RateLimit for both subjects, took 12.8 s over the first deletion of a
  // fresh cluster once (it starts watching a new CRD some seconds after the CRD appears).
  const extra = Array.from({ length: o.changes + 1 }, (_, k) => podManifest(o.size + k, ns));
  await env.createAll(extra, o.width);
  const rest = await settle(r, 5_000);
  const changes = new Changes();
  const stop = new AbortController();
  const watches: Promise<void>[] = [];
  await Promise.all(
    [subject.type, RESOURCES.EnvoyFilter].map((type) =>
      new Promise<void>((listed, failed) => {
        const kind = type === RESOURCES.EnvoyFilter ? "EnvoyFilter" : "RateLimit";
        const see = (obj: KubeObject, how: Seen) => changes.see(kind, obj, how);
        watches.push(followRateLimits(env.api, ns, see, stop.signal, listed, type).catch(failed));
      })
    ),
  );
  const samples: Sample[] = [];
  let t0 = Date.now();
  let keep = false;
  const time = async (
    change: Change,
    name: string,
    write: () => Promise<KubeObject | undefined>,
  ) => {
    const sample = await timeChange(changes, change, name, write, o.boundMs);
    if (keep) samples.push(sample);
    await sleep(o.spacingMs);
  };
  try {
    // Round -1 is the untimed one, on the last Pod.
    for (let k = -1; k < o.changes; k++) {
      keep = k >= 0;
      if (k === 0) t0 = Date.now();
      const created = rateLimitObject({
        i: o.size + (keep ? k : o.changes),
        rules: o.rules,
        namespace: ns,
        type: subject.type,
      });
      const name = created.metadata.name;
      await time("create", name, () => retrying(() => env.api.create(subject.type, created)));
      const edited = workloadName((k + o.size) % o.size);
      await time("edit", edited, () =>
        retrying(() =>
          env.api.patch(subject.type, ns, edited, [
            { op: "replace", path: "/spec/local/defaultBucket/maxTokens", value: 1_000 + k },
          ])
        ));
      await time("delete", name, async () => {
        await retrying(() => env.api.delete(subject.type, ns, name));
        return undefined;
      });
    }
  } finally {
    stop.abort();
    await Promise.all(watches);
  }
  return { samples, rest, ms: Date.now() - t0 };
}

/** Reports a run's figures: p50 of each change to its EnvoyFilter and to its status. */
export function reportLatency(
  out: { add(name: string, ms: number, note: string): void; skip(name: string, why: string): void },
  run: LatencyRun,
  o: LatencyOptions,
): void {
  const at = `among ${fmt(o.size)} Ready`;
  const mark = run.rest.idle
    ? ""
    : `NOT AT REST: still reconciling ${fmt(run.rest.boundMs / 1000)} s after all Ready; `;
  const what: Record<Change, [string, string]> = {
    create: ["create one RateLimit", "its status Ready"],
    edit: ["edit one RateLimit's spec", "its status naming the new generation"],
    delete: ["delete one RateLimit", "the RateLimit gone"],
  };
  for (const change of CHANGES) {
    const [verb, status] = what[change];
    const ef = spread(run.samples, change, "envoyFilterMs");
    const st = spread(run.samples, change, "statusMs");
    if (ef) {
      out.add(
        `${verb} ${at}: write to EnvoyFilter ${change === "delete" ? "gone" : "changed"}, p50`,
        ef.p50,
        `${mark}${describe(ef, o.boundMs)}; from watch events`,
      );
    }
    if (st) {
      out.add(
        `${verb} ${at}: write to ${status}, p50`,
        st.p50,
        `${mark}${describe(st, o.boundMs)}`,
      );
    } else if (change === "edit") {
      out.skip(
        `${verb} ${at}: write to ${status}`,
        "not observable: its status has no observedGeneration and stays the same after an edit",
      );
    }
  }
}
