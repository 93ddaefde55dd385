/**
 * Flat in the cluster's size (issue 46 point 3): 100 RateLimits on their own Pods, then the same
 * with 20,000 unrelated Pods in 2,000 namespaces beside them. For each subject, and for the
 * operator of another tree when `BENCH_BEFORE_OPERATOR_ROOT` names one (the same run's "before"):
 * process spawn to first reconcile done (median of `startupRuns`, from its debug log), and from
 * `memoryRuns` more starts at the info level, resident memory once settled and the peak (VmHWM)
 * each reached from its start, which is the start-up's peak: the peak over settled is the median
 * of the starts' own ratios, the settled figure the median of theirs. Each subject is
 * started once first, unmeasured, so a tree's first run does not pay for transpiling its modules.
 */
import { fmt, median } from "../stats.ts";
import { inParallel } from "../../src/runtime/mod.ts";
import { until } from "./env.ts";
import { IDLE_BOUND_MS, idleRss } from "./idle.ts";
import { workload } from "./phases.ts";
import { namespaceObject, podManifest } from "../fixtures.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { list, s } from "./rows.ts";
import type { PhaseRunner } from "./scale.ts";
import type { Subject } from "./subject.ts";

/** Unrelated namespaces, and Pods in each. */
export const CROWD = { namespaces: 2_000, podsEach: 10 };
/** RateLimits (on as many Pods of their own) present throughout. */
const LIMITS = 100;

/** One memory start: its settled VmRSS and its VmHWM, MB. */
export interface MemoryStart {
  mb: number;
  peakMb: number;
}

/** One state of the cluster measured for one subject. */
interface Reading {
  doneMs: number[];
  memory: MemoryStart[];
}

/** The median start's figures: settled and peak MB, and the median of the starts' ratios. */
export function memoryFigures(memory: readonly MemoryStart[]): {
  mb: number;
  peakMb: number;
  ratio: number;
} {
  return {
    mb: median(memory.map((m) => m.mb)),
    peakMb: median(memory.map((m) => m.peakMb)),
    ratio: median(memory.map((m) => m.peakMb / m.mb)),
  };
}

/** `74.6/66.8` for each start: peak over settled, MB. */
function readings(memory: readonly MemoryStart[]): string {
  return memory.map((m) => `${fmt(m.peakMb, 1)}/${fmt(m.mb, 1)}`).join(", ");
}

/** The phase: figures without the crowd, the crowd created, the figures with it. */
export async function crowdedPhase(
  run: PhaseRunner,
  subjects: readonly Subject[],
  crowd = CROWD,
): Promise<void> {
  const { env, o, add } = run;
  const measured = new Map<string, Reading>();
  // Two operators (before and after) share a key: their logs, named by identity, must not.
  const id = (subject: Subject) => `${subject.key}${subjects.indexOf(subject)}`;
  const measure = async (subject: Subject, tag: string, runs: number) => {
    const done: number[] = [];
    const memory: MemoryStart[] = [];
    for (let k = 0; k < runs; k++) {
      const r = await run.start(subject, `${id(subject)}-${tag}-${k}`, true);
      const f = await until(
        `${subject.label}: a first reconcile done in its log`,
        async () => (await r.firstReconcile())?.doneMs,
        IDLE_BOUND_MS,
        100,
      );
      done.push(f);
      await run.stop();
    }
    // Memory from starts of their own, logging as the operator runs (info): a debug log of every
    // reconcile is garbage the figure should not hold.
    for (let k = 0; k < o.memoryRuns; k++) {
      const r = await run.start(subject, `${id(subject)}-${tag}-memory-${k}`);
      const { mb, peakMb } = await idleRss(r, 3_000);
      memory.push({ mb, peakMb });
      await run.stop();
    }
    measured.set(`${subject.label}|${tag}`, { doneMs: done, memory });
  };
  // One set of RateLimits a type (every operator subject reconciles the operator's own).
  const types = [...new Set(subjects.map((x) => x.type))];
  const ns = (subject: Subject) => `bench-crowd-limits-${types.indexOf(subject.type)}`;
  for (
    const subject of subjects.filter((x, i) => subjects.findIndex((y) => y.type === x.type) === i)
  ) {
    await env.namespace(ns(subject));
    await env.createAll(workload(LIMITS, o.rules, ns(subject), subject.type), o.width, [
      subject.type,
    ]);
  }
  for (const subject of subjects) {
    // Unmeasured: its modules transpiled, its first run on this cluster done.
    await run.start(subject, `${id(subject)}-crowd-warm`);
    await run.stop();
    await measure(subject, "alone", 1);
  }
  const names = Array.from({ length: crowd.namespaces }, (_, k) => `bench-crowd-${k}`);
  const t0 = performance.now();
  await env.createAll(names.map(namespaceObject), o.width, [RESOURCES.Namespace]);
  const pods = names.flatMap((n, k) =>
    Array.from({ length: crowd.podsEach }, (_, j) => podManifest(100_000 + k * 100 + j, n))
  );
  await env.createAll(pods, o.width);
  const total = pods.length;
  const createdS = s(performance.now() - t0);
  for (const subject of subjects) await measure(subject, "crowded", o.startupRuns);
  for (const subject of subjects) {
    const alone = measured.get(`${subject.label}|alone`)!;
    const crowded = measured.get(`${subject.label}|crowded`)!;
    const aloneMb = memoryFigures(alone.memory);
    const crowdedMb = memoryFigures(crowded.memory);
    const what = `${fmt(LIMITS)} RateLimits and ${fmt(total)} unrelated Pods in ${
      fmt(crowd.namespaces)
    } namespaces`;
    add(subject, `start-up: process spawn to first reconcile done (${what})`, {
      value: s(median(crowded.doneMs)),
      unit: "s",
      ...(subject.key === "operator" ? { target: { of: "value", op: "<=", bound: 1 } } : {}),
      note: `median of ${crowded.doneMs.length}: ${list(crowded.doneMs.map(s))} s; without ` +
        `the unrelated Pods ${list(alone.doneMs.map(s))} s; creating them took ${
          fmt(createdS, 1)
        } s`,
    });
    add(subject, `peak resident memory (VmHWM) over settled (${what})`, {
      value: crowdedMb.peakMb,
      unit: "MB",
      baseline: { name: "settled resident memory (VmRSS)", value: crowdedMb.mb },
      ratio: crowdedMb.ratio,
      ...(subject.key === "operator" ? { target: { of: "ratio", op: "<=", bound: 1.1 } } : {}),
      note: `VmHWM from its start (its start-up's peak) and VmRSS once idle and settled, ` +
        `each of ${crowded.memory.length} starts of their own at the info level (peak/settled ` +
        `MB: ${readings(crowded.memory)}); the ratio is the median of theirs, the MB figures ` +
        `medians; without the unrelated Pods: ${readings(alone.memory)}`,
    });
    add(subject, `settled memory growth per 1,000 unrelated Pods`, {
      value: (crowdedMb.mb - aloneMb.mb) / (total / 1_000),
      unit: "MB",
      ...(subject.key === "operator" ? { target: { of: "value", op: "<=", bound: 0.72 } } : {}),
      note: `VmRSS settled, median of ${crowded.memory.length} starts: ${
        fmt(aloneMb.mb, 1)
      } MB without, ${fmt(crowdedMb.mb, 1)} MB with ${fmt(total)} unrelated Pods`,
    });
  }
  await env.deleteNamespaces([...new Set(subjects.map(ns))]);
  // The crowd's deletion is asked for, not waited on: the namespace controller takes minutes over
  // 20,000 Pods, and this is the last phase (the control plane goes down after it).
  await inParallel(names, o.width, (n) => env.api.delete(RESOURCES.Namespace, undefined, n));
}
