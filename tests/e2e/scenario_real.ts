/**
 * Runs a simulator scenario against the real control plane: apply and delete as kubectl does
 * (server-side apply, field manager `kubectl`, forced, like the simulator's user), crash faults as
 * SIGKILL and a restart, and each `expect` checked on the real objects with the simulator's own
 * subset match. Virtual times become waits: a step's expectations must hold within the scenario's
 * time since the previous step (at least {@link MIN_BOUND_MS}), polled, never a fixed sleep.
 */
import {
  expectationRef,
  expectedObject,
  expectedSeenStatus,
  unwantedCondition,
} from "../../sim/scenario/expect.ts";
import type { Expectation, Scenario, ScenarioStep } from "../../sim/scenario/format.ts";
import { firstDifference } from "../../sim/scenario/match.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { E2E } from "./harness.ts";
import { waitFor } from "./harness.ts";
import type { OperatorProcess } from "./operator.ts";
import type { StatusRecorder } from "./recorder.ts";
import type { StatusView } from "./status.ts";

/** kubectl's refusal of a kind its discovery does not have (yet). */
const NOT_DISCOVERED = /resource mapping not found|no matches for kind/;
/** How long an apply waits for a just-created CRD's kind to reach discovery. */
const DISCOVERY_WAIT_MS = 15_000;

/** The shortest bound a real expectation gets, whatever the scenario's virtual gap. */
export const MIN_BOUND_MS = 30_000;
/** Real pause between steps at different virtual times: enough for a new creationTimestamp second. */
const STEP_GAP_MS = 1_100;
/** Longest real restart delay of a crash fault. */
const MAX_RESTART_MS = 5_000;

/** Why a scenario cannot run on a real cluster, or undefined when it can. */
export function realBlocker(sc: Scenario): string | undefined {
  if (sc.faults !== undefined && sc.faults !== "none") {
    return `fault mix ${JSON.stringify(sc.faults)} (simulator only)`;
  }
  for (const step of sc.steps) {
    if (step.requests) return "sends requests through the data-plane model";
    const f = (step.fault ?? []).find((f) => f.kind !== "crash");
    if (f) return `fault ${f.kind} (simulator only)`;
  }
  return undefined;
}

/** The kubectl resource argument of a kind: `deployment.apps`, `ratelimit.gateway.platform-project.io`. */
export function resourceArg(kind: string, apiVersion?: string): string {
  const group = apiVersion?.includes("/") ? apiVersion.split("/")[0] : "";
  return kind.toLowerCase() + (group ? `.${group}` : "");
}

const ERROR_REASONS: Record<number, string[]> = {
  400: ["BadRequest"],
  403: ["Forbidden"],
  404: ["NotFound", "not found"],
  409: ["Conflict", "AlreadyExists", "already exists"],
  422: ["Invalid", "is invalid"],
};

/** What the operator replicas of one real run are. */
export interface RealRun {
  env: E2E;
  recorder: StatusRecorder;
  /** Recorder mark at the start of the scenario. */
  mark: number;
  /** Starts the next replica (`platform-operator-N`), as the simulator names them. */
  startReplica(): Promise<OperatorProcess>;
  current?: OperatorProcess;
  /**
   * The `transient` statuses this run did not see (the operator went past them before it wrote
   * them), each as its expectation and what was seen instead; filled in by {@link runReal}.
   */
  unseen?: Map<string, string>;
}

/** Runs every step; throws with the step and the first differing field. */
export async function runReal(sc: Scenario, run: RealRun): Promise<void> {
  let prevAt = 0;
  for (const [i, step] of sc.steps.entries()) {
    if (i > 0 && step.at > prevAt) await sleep(Math.min(step.at - prevAt, STEP_GAP_MS));
    const where = `step ${i + 1} (at ${step.at / 1000}s)`;
    await runStep(step, run, where, Math.max(step.at - prevAt, MIN_BOUND_MS));
    prevAt = step.at;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runStep(
  step: ScenarioStep,
  run: RealRun,
  where: string,
  boundMs: number,
): Promise<void> {
  for (const f of step.fault ?? []) {
    if (f.kind !== "crash") {
      throw new Error(`${where}: fault ${f.kind} cannot run on a real cluster`);
    }
    const dead = run.current;
    await dead?.killNow();
    // The restart happens in the background, as the simulator's clock-scheduled one does.
    setTimeout(() => run.startReplica().catch(() => {}), Math.min(f.restartAfter, MAX_RESTART_MS));
  }
  const kube = run.env.kube;
  const errors: string[] = [];
  if (step.apply) {
    await ensureNamespaces(run.env, step.apply as KubeObject[]);
    const apply = () =>
      kube.tryApply(step.apply as KubeObject[], [
        "--server-side",
        "--force-conflicts",
        "--field-manager=kubectl",
      ]);
    let r = await apply();
    // A kind whose CRD was just created (by the operator) reaches the API server's discovery a
    // moment after the CRD is Established; kubectl, which maps kinds through discovery, refuses it
    // until then. A user runs the command again; so does the step, for a bounded while. The
    // simulator has no discovery, so this wait is the real world's alone.
    const until = Date.now() + DISCOVERY_WAIT_MS;
    const undiscovered = () =>
      r.code !== 0 && !step.expectError && NOT_DISCOVERED.test(r.stderr) && Date.now() < until;
    while (undiscovered()) {
      await new Promise((res) => setTimeout(res, 500));
      r = await apply();
    }
    if (r.code !== 0) errors.push(r.stderr.trim());
  }
  for (const ref of step.delete ?? []) {
    const r = await kube.run([
      "delete",
      resourceArg(ref.kind, ref.apiVersion),
      ref.name,
      "--wait=false",
      ...(ref.namespace ? ["-n", ref.namespace] : []),
    ]);
    if (r.code !== 0) errors.push(r.stderr.trim());
  }
  checkErrors(step, errors, where);
  if (!step.expect?.length) return;
  let last: string | undefined;
  await waitFor(`${where}: expectations`, async () => {
    for (const e of step.expect!) {
      last = await checkReal(run, e);
      if (last) return false;
    }
    return true;
  }, { timeoutMs: boundMs, intervalMs: 200, describe: () => Promise.resolve(last ?? "") });
}

function checkErrors(step: ScenarioStep, errors: string[], where: string): void {
  const want = step.expectError;
  if (!want) {
    if (errors.length) throw new Error(`${where}: kubectl failed:\n${errors.join("\n")}`);
    return;
  }
  const text = errors.join("\n");
  if (!text) {
    throw new Error(`${where}: expected an error ${want.code ?? ""}, but kubectl succeeded`);
  }
  const reasons = [
    ...(want.code !== undefined ? ERROR_REASONS[want.code] ?? [] : []),
    ...(want.reason ? [want.reason] : []),
  ];
  if (reasons.length && !reasons.some((r) => text.includes(r))) {
    throw new Error(
      `${where}: expected ${want.code ?? ""} ${want.reason ?? ""}, kubectl said:\n${text}`,
    );
  }
  if (want.message && !text.includes(want.message)) {
    throw new Error(
      `${where}: expected the error to contain ${
        JSON.stringify(want.message)
      }, kubectl said:\n${text}`,
    );
  }
}

async function ensureNamespaces(env: E2E, objs: KubeObject[]): Promise<void> {
  const created = new Set(objs.filter((o) => o.kind === "Namespace").map((o) => o.metadata.name));
  for (const ns of new Set(objs.map((o) => o.metadata.namespace).filter((n): n is string => !!n))) {
    if (created.has(ns) || await env.kube.get("namespace", ns)) continue;
    await env.kube.must(["create", "namespace", ns]);
  }
}

/**
 * `e` as it holds on the real cluster's kwok node, whose KEDA Pods never serve: there the API
 * server's aggregator reports KEDA's metrics APIService not Available, so a Scaler the simulator
 * expects installed and verified (Ready, or Warning with `Installed=True/Verified`) is the Scaler's
 * row 14 (Warning, `Installed=False/MetricsAPIUnavailable`).
 */
export function onKwok(e: Expectation): Expectation {
  if (e.kind !== "Scaler") return e;
  const verified = (c: { type?: string; status?: string; reason?: string }) =>
    c.type === "Installed" && c.status === "True" && c.reason === "Verified";
  const conditions = e.conditions?.map((c) =>
    verified(c) ? { ...c, status: "False", reason: "MetricsAPIUnavailable" } : c
  );
  const state = (e.status as { state?: unknown } | undefined)?.state;
  const ready = state === "Ready" || (state === "Warning" && e.conditions?.some(verified));
  return {
    ...e,
    ...(conditions ? { conditions } : {}),
    ...(ready ? { status: { ...e.status, state: "Warning" } } : {}),
  };
}

/** The first difference between an expectation and the real cluster now; undefined when it holds. */
export async function checkReal(
  run: RealRun,
  expectation: Expectation,
): Promise<string | undefined> {
  const e = onKwok(expectation);
  const kube = run.env.kube;
  const resource = resourceArg(e.kind, e.apiVersion);
  if (e.count !== undefined || e.name === undefined) {
    const labelSelector = e.labels
      ? Object.entries(e.labels).map(([k, v]) => `${k}=${v}`).join(",")
      : undefined;
    const items = await kube.list(resource, {
      namespace: e.namespace,
      allNamespaces: e.namespace === undefined,
      labelSelector,
    });
    const want = e.count ?? 1;
    return items.length === want
      ? undefined
      : `${expectationRef(e)}: count: expected ${want}, got ${items.length}`;
  }
  if (e.seen) {
    const expected = expectedSeenStatus(e);
    const history = run.recorder.statuses(`${e.kind} ${e.namespace ?? ""}/${e.name}`, run.mark);
    const ref = `${expectationRef(e)} ${JSON.stringify(expected)}`;
    if (history.some((s) => firstDifference(expected, s) === undefined)) {
      run.unseen?.delete(ref);
      return undefined;
    }
    const missed = `no status so far matched ${JSON.stringify(expected)} (${history.length} seen: ${
      history.map(briefStatus).join("; ")
    })`;
    if (!e.transient) return `${expectationRef(e)}: ${missed}`;
    (run.unseen ??= new Map()).set(ref, missed);
    return undefined;
  }
  const obj = await kube.get(resource, e.name, e.namespace);
  if (e.absent) return obj ? `${expectationRef(e)}: expected absent, but it exists` : undefined;
  if (!obj) return `${expectationRef(e)}: expected to exist, but it does not`;
  const diff = firstDifference(expectedObject(e), obj) ?? unwantedCondition(e, obj);
  return diff ? `${expectationRef(e)}: ${diff}` : undefined;
}

/** A status in one line: its state and each condition's type, status and reason. */
function briefStatus(s: StatusView | undefined): string {
  const conditions = (s?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);
  return `${s?.state ?? "(no state)"} [${conditions.join(" ")}]`;
}
