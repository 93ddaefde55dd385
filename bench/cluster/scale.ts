/**
 * The largest control-plane figures: memory and time at `memoryMax` RateLimits (1,000 a namespace)
 * for every subject, and `memoryMax` in one namespace for the operator against the baseline client.
 */
import { fmt } from "../stats.ts";
import type { BenchCluster } from "./env.ts";
import { idleRss, settle } from "./idle.ts";
import type { ClusterOptions } from "./options.ts";
import { converge, layout, writesNote } from "./phases.ts";
import { type Rows, s, startMark } from "./rows.ts";
import type { Running, Subject } from "./subject.ts";

/** What a phase needs of the bench run: its cluster, sizes, row writers and one subject at a time. */
export interface PhaseRunner extends Rows {
  env: BenchCluster;
  o: ClusterOptions;
  /** Starts `subject`; `debug`: it logs every reconcile (the first reconcile is read from it). */
  start(subject: Subject, identity: string, debug?: boolean): Promise<Running>;
  stop(): Promise<void>;
}

/** Memory at scale: `memoryMax` RateLimits and Pods, 1,000 a namespace, all Ready. */
export async function scalePhase(run: PhaseRunner, subjects: readonly Subject[]): Promise<void> {
  const { env, o, add, memory, start, stop } = run;
  for (const subject of subjects) {
    const r = await start(subject, `${subject.key}-scale`);
    const before = await settle(r, 2_000, 60_000);
    const ns = layout(`bench-${subject.key}-scale`, o.memoryMax, true);
    const c = await converge(env, ns, o.rules, o.width, { s: subject, r });
    const m = await idleRss(r, 5_000);
    add(subject, `${fmt(o.memoryMax)} RateLimits on ${fmt(o.memoryMax)} Pods, until all Ready`, {
      value: s(c.ms),
      unit: "s",
      note:
        `${startMark(before)}one run; ${ns.length} namespaces; creating took ${
          fmt(s(c.createdMs), 1)
        } s; ` +
        `CPU ${fmt(c.cpuS ?? 0, 1)} s; ${writesNote(c.writes)}`,
    });
    memory(subject, `${fmt(o.memoryMax)} RateLimits Ready`, m, {
      ...(subject.key === "operator" && o.memoryMax >= 10_000
        ? { target: { of: "value", op: "<=", bound: 150 } }
        : {}),
      note: `${m.mark}VmRSS once idle and settled; ${ns.length} namespaces of ` +
        `RateLimits and their Pods, EnvoyFilters as many; ${await r.memoryNote()}`,
    });
    await stop();
    await env.deleteNamespaces(ns.map(([x]) => x));
  }
}

/** Many RateLimits in one namespace: the operator against the baseline (issue 14). */
export async function oneNamespacePhase(run: PhaseRunner, subject: Subject): Promise<void> {
  const { env, o, add, start, stop } = run;
  const m = o.memoryMax;
  const bns = layout("bench-one-base", m, false);
  const b = await converge(env, bns, o.rules, o.width);
  await env.deleteNamespaces(bns.map(([x]) => x));
  const r = await start(subject, "operator-one");
  const before = await settle(r, 2_000, 60_000);
  const ns = layout("bench-one-op", m, false);
  const c = await converge(env, ns, o.rules, o.width, { s: subject, r });
  const { mb: rss, mark } = await idleRss(r, 5_000);
  add(
    subject,
    `${fmt(m)} RateLimits on ${fmt(m)} Pods in one namespace, created at once, until all Ready`,
    {
      value: s(c.ms),
      unit: "s",
      baseline: { name: "the same baseline client", value: s(b.ms) },
      ratio: c.ms / b.ms,
      target: { of: "ratio", op: "<=", bound: 1.3 },
      note: `${startMark(before)}one run each; CPU ${fmt(c.cpuS ?? 0, 1)} s; ` +
        `RSS ${mark ? `(${mark.replace(/; $/, "")}) ` : "once idle "}${fmt(rss, 1)} MB; ` +
        `creating took ${fmt(s(c.createdMs), 1)} s (baseline run ${fmt(s(b.createdMs), 1)} s); ` +
        `operator: ${writesNote(c.writes)}; baseline: ${writesNote(b.writes)}`,
    },
  );
  await stop();
  await env.deleteNamespaces(ns.map(([x]) => x));
}
