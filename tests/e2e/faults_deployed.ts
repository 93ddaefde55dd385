/**
 * What the fault tests (issue #45) share: the operator deployed from deploy/ as two Pods on the
 * real node (tests/e2e/deployed.ts's overlay, unchanged), a load of RateLimits on real-node and
 * kwok Pods, the checks that nothing was lost (every RateLimit Ready at its generation, one
 * EnvoyFilter each, owned by it), the Lease as the API server holds it, and the audit log's
 * writes by Pod.
 *
 * The count: `FAULTS_RATELIMITS` (default {@link DEFAULT_COUNT}, what CI runs); the issue's
 * full 1,000 with `FAULTS_RATELIMITS=1000` (docs/faults.md).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  benchNodeObject,
  podManifest,
  rateLimitObject,
  workloadName,
} from "../../bench/fixtures.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { OPERATOR_USER } from "../../tools/cluster/mod.ts";
import {
  OPERATOR_NAMESPACE,
  OPERATOR_SERVICE_ACCOUNT,
} from "../../tools/cluster/operator_identity.ts";
import { type PodWrite, podWrites } from "../../tools/cluster/faults.ts";
import { podcheckPod } from "../../tools/cluster/real_node_fixtures.ts";
import { buildImage } from "../../tools/image/image.ts";
import { DEPLOYED, imageOverlay, type PodView, twoReady } from "./deployed.ts";
import { MANAGED } from "./fixtures.ts";
import { type E2E, waitFor } from "./harness.ts";

/** RateLimits CI runs each fault with. */
export const DEFAULT_COUNT = 200;
/** RateLimits of this run (`FAULTS_RATELIMITS`, default {@link DEFAULT_COUNT}). */
export const COUNT: number = Number(Deno.env.get("FAULTS_RATELIMITS") ?? DEFAULT_COUNT);
/** The first this many RateLimits select a Pod on the real node; the others, kwok Pods. */
export const REAL_PODS = 3;
/** Namespace of the RateLimits and their Pods. */
export const NS = "faults";
/** The image the operator runs. */
export const IMAGE = "localhost/platform-operator:dev";
/** Lease duration, renew deadline and retry period of deploy/'s operator (src/runtime/leader.ts). */
export const LEASE = { durationMs: 10_000, renewDeadlineMs: 7_000, retryMs: 2_000 } as const;
/** Writes that are not state: the election, Events, access reviews at start-up. */
export const NOT_STATE = new Set([
  "leases",
  "events",
  "selfsubjectrulesreviews",
  "selfsubjectaccessreviews",
]);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Logs a measured figure, one line, greppable (`[faults]`). */
export function figure(msg: string): void {
  console.error(`[faults] ${msg}`);
}

/** GET on the API server as the admin (faster than a kubectl per poll); JSON, or undefined on 404. */
export function apiGet<T>(env: E2E, path: string): Promise<T | undefined> {
  return apiRequest<T>(env, "GET", path);
}

/** A request to the API server as the admin (a merge patch for PATCH); undefined on 404. */
export async function apiRequest<T>(
  env: E2E,
  method: string,
  path: string,
  body?: unknown,
): Promise<T | undefined> {
  const { status, text } = await requestAs(env, env.cluster.tokens.admin, method, path, body);
  if (status === 404) return undefined;
  if (status < 200 || status > 299) {
    throw new Error(`${method} ${path}: ${status} ${text.slice(0, 300)}`);
  }
  return JSON.parse(text) as T;
}

/** A request to the API server with `token` (a merge patch for PATCH): its status and text. */
export async function requestAs(
  env: E2E,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const client = Deno.createHttpClient({
    caCerts: [await Deno.readTextFile(env.cluster.caCert)],
  });
  try {
    const res = await fetch(`${env.cluster.server}${path}`, {
      method,
      client,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/merge-patch+json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, text: await res.text() };
  } finally {
    client.close();
  }
}

/**
 * A token of the operator's ServiceAccount bound to Pod `pod` (its name then in the user's
 * extra, as in the token the kubelet mounts), or to no Pod.
 */
export async function operatorToken(env: E2E, pod?: string): Promise<string> {
  const bound = pod ? ["--bound-object-kind=Pod", `--bound-object-name=${pod}`] : [];
  return (await env.kube.must([
    "create",
    "token",
    OPERATOR_SERVICE_ACCOUNT,
    "-n",
    OPERATOR_NAMESPACE,
    ...bound,
  ])).trim();
}

/**
 * Builds the image, loads it into the real node and applies deploy/ (only the image changed);
 * platform-system stays placed on the real node, so replacements run there too. Resolves with the
 * two Pods Ready.
 */
export async function deployOperator(env: E2E): Promise<PodView[]> {
  const node = env.cluster.realNode!;
  const image = await buildImage((m) => console.error(`[image] ${m}`), { reuse: true });
  assert.ok((await node.loadImage(image.archive)).includes(image.tag), image.tag);
  await node.loadImage(node.podcheckArchive);
  const overlay = await imageOverlay(join(env.dir, "overlay"), IMAGE);
  // The cluster made platform-system with the operator's identity (tools/cluster/operator_identity.ts).
  await node.placeNamespace(DEPLOYED.namespace);
  await env.kube.must(["apply", "-k", overlay]);
  return await twoReady(env);
}

/** A Pod on the real node (podcheck) with the sidecar's annotation, selected as `app: w-<i>`. */
function realPod(env: E2E, i: number): KubeObject {
  const pod = JSON.parse(podcheckPod(env.cluster, NS, `${workloadName(i)}-0`)) as KubeObject;
  const kwok = podManifest(i, NS);
  pod.metadata.labels = kwok.metadata.labels;
  pod.metadata.annotations = kwok.metadata.annotations;
  return pod;
}

async function createAll(env: E2E, items: KubeObject[]): Promise<void> {
  for (let i = 0; i < items.length; i += 250) {
    const list = { apiVersion: "v1", kind: "List", items: items.slice(i, i + 250) };
    await env.kube.must(["create", "-f", "-"], { stdin: JSON.stringify(list) });
  }
}

/**
 * `count` RateLimits (4 rules each), each selecting one Pod: the first {@link REAL_PODS} on the
 * real node, the rest on a kwok node; resolves once all are converged. Returns how long that took.
 */
export async function createLoad(env: E2E, count = COUNT): Promise<number> {
  const t0 = Date.now();
  await env.kube.must(["create", "namespace", NS]);
  await env.kube.apply([benchNodeObject()]);
  const pods = Array.from(
    { length: count },
    (_, i) => i < REAL_PODS ? realPod(env, i) : podManifest(i, NS),
  );
  await createAll(env, pods);
  await createAll(
    env,
    Array.from({ length: count }, (_, i) => rateLimitObject({ i, rules: 4, namespace: NS })),
  );
  await waitConverged(env, "the RateLimits created", count, 300_000);
  const ms = Date.now() - t0;
  figure(`${count} RateLimits (${REAL_PODS} on real-node Pods) created and Ready in ${ms} ms`);
  return ms;
}

/** A RateLimit as the checks read it. */
export interface RateLimitView extends KubeObject {
  status?: { state?: string; observedGeneration?: number };
}

/** The load's RateLimits ({@link NS}) as the API server holds them now. */
export async function rateLimitsNow(env: E2E): Promise<RateLimitView[]> {
  return (await apiGet<{ items: RateLimitView[] }>(
    env,
    `/apis/gateway.platform-project.io/v1alpha1/namespaces/${NS}/ratelimits`,
  ))?.items ?? [];
}

/** What is not as it should be, one line each (empty: all converged, nothing lost). */
export async function problems(env: E2E, count = COUNT): Promise<string[]> {
  const rls = await rateLimitsNow(env);
  const filters = (await apiGet<{ items: KubeObject[] }>(
    env,
    `/apis/networking.istio.io/v1alpha3/namespaces/${NS}/envoyfilters?labelSelector=${
      encodeURIComponent(MANAGED)
    }`,
  ))?.items ?? [];
  const out: string[] = [];
  if (rls.length !== count) out.push(`${rls.length} RateLimits, not ${count}`);
  for (const rl of rls) {
    const m = rl.metadata;
    const s = rl.status ?? {};
    if (s.state !== "Ready" || s.observedGeneration !== m.generation) {
      out.push(`${m.name}: ${s.state} at ${s.observedGeneration} of ${m.generation}`);
    }
  }
  // Each EnvoyFilter is owned by its RateLimit (the garbage collector deletes it with it): the
  // RateLimit needs no finalizer, and none is set.
  const owners = filters.map((f) => f.metadata.ownerReferences?.[0]?.uid ?? "");
  const byOwner = new Map<string, number>();
  for (const o of owners) byOwner.set(o, (byOwner.get(o) ?? 0) + 1);
  for (const rl of rls) {
    const n = byOwner.get(rl.metadata.uid ?? "") ?? 0;
    if (n !== 1) out.push(`${rl.metadata.name}: ${n} EnvoyFilters`);
  }
  if (filters.length !== count) out.push(`${filters.length} EnvoyFilters, not ${count}`);
  return out;
}

/** Each RateLimit's generation as the API server holds it, by name. */
export async function generationsOf(env: E2E): Promise<Map<string, number>> {
  const rls = await rateLimitsNow(env);
  return new Map(rls.map((rl) => [rl.metadata.name, rl.metadata.generation ?? 1]));
}

/** Waits until {@link problems} finds none; returns how long it took. */
export async function waitConverged(
  env: E2E,
  what: string,
  count = COUNT,
  timeoutMs = 120_000,
): Promise<number> {
  const t0 = Date.now();
  let last: string[] = [];
  await waitFor(`${what}: all ${count} RateLimits Ready, one EnvoyFilter each`, async () => {
    last = await problems(env, count);
    return last.length === 0;
  }, {
    timeoutMs,
    intervalMs: 500,
    describe: () => Promise.resolve(`${last.length} problems: ${last.slice(0, 10).join("; ")}`),
  });
  return Date.now() - t0;
}

/**
 * Edits RateLimit `i`'s default bucket (a merge patch as the admin; a new generation); resolves
 * with that generation.
 */
export async function editRateLimit(env: E2E, i: number, maxTokens: number): Promise<number> {
  const rl = await apiRequest<RateLimitView>(env, "PATCH", rateLimitPath(i), {
    spec: { local: { defaultBucket: { maxTokens } } },
  });
  return rl?.metadata.generation ?? 0;
}

function rateLimitPath(i: number): string {
  return `/apis/gateway.platform-project.io/v1alpha1/namespaces/${NS}/ratelimits/${
    workloadName(i)
  }`;
}

/** Waits until RateLimit `i` is Ready at `generation` at least; returns how long it took. */
export async function waitReconciled(
  env: E2E,
  i: number,
  generation: number,
  timeoutMs = 60_000,
): Promise<number> {
  const t0 = Date.now();
  const name = workloadName(i);
  await waitFor(`${name} Ready at generation ${generation}`, async () => {
    const rl = await apiGet<RateLimitView>(env, rateLimitPath(i));
    return rl?.status?.state === "Ready" && (rl.status.observedGeneration ?? 0) >= generation;
  }, { timeoutMs, intervalMs: 100 });
  return Date.now() - t0;
}

/** The Lease as the API server holds it. */
export interface LeaseView {
  holder: string;
  renewTime: string;
  transitions: number;
}

/** The operator's Lease now. */
export async function lease(env: E2E): Promise<LeaseView | undefined> {
  const l = await apiGet<
    { spec?: { holderIdentity?: string; renewTime?: string; leaseTransitions?: number } }
  >(
    env,
    `/apis/coordination.k8s.io/v1/namespaces/${DEPLOYED.namespace}/leases/${DEPLOYED.name}`,
  );
  if (!l?.spec) return undefined;
  return {
    holder: l.spec.holderIdentity ?? "",
    renewTime: l.spec.renewTime ?? "",
    transitions: l.spec.leaseTransitions ?? 0,
  };
}

/**
 * Samples the Lease every `everyMs` until stopped and says what it saw: the longest time without
 * a renewal by a holder (a gap in leadership, as a standby would count it) and the holders.
 */
export class LeaseSampler {
  readonly samples: { at: number; lease?: LeaseView }[] = [];
  #stop = false;
  #done: Promise<void>;

  constructor(env: E2E, everyMs = 200) {
    this.#done = (async () => {
      while (!this.#stop) {
        const at = Date.now();
        const l = await lease(env).catch(() => undefined);
        this.samples.push({ at, lease: l });
        await sleep(everyMs);
      }
    })();
  }

  /** Stops sampling; resolves when the last sample is in. */
  async stop(): Promise<void> {
    this.#stop = true;
    await this.#done;
  }

  /**
   * The longest time between two renewals seen (a new renewTime, or a new holder), counted from
   * when a sample first showed each: how long no one was seen to lead.
   */
  get longestGapMs(): number {
    let last = 0;
    let prev = "";
    let gap = 0;
    for (const s of this.samples) {
      if (!s.lease?.holder) continue;
      const key = `${s.lease.holder}@${s.lease.renewTime}`;
      if (key === prev) continue;
      if (last) gap = Math.max(gap, s.at - last);
      last = s.at;
      prev = key;
    }
    return gap;
  }

  /** The holders seen, in order, each once in a row. */
  get holders(): string[] {
    const out: string[] = [];
    for (const s of this.samples) {
      const h = s.lease?.holder ?? "";
      if (h && out.at(-1) !== h) out.push(h);
    }
    return out;
  }
}

/** Writes by the operator's Pods since `sinceMs`, with their Pod (tools/cluster/faults.ts). */
export function operatorWrites(env: E2E, sinceMs: number): Promise<PodWrite[]> {
  return podWrites(env.cluster.auditLog, OPERATOR_USER, sinceMs);
}

/** One write as a short line for messages; a RateLimit status write with what it said. */
export function line(w: PodWrite): string {
  return `${new Date(w.at).toISOString()} ${w.pod} ${w.verb} ${w.resource}${
    w.subresource ? `/${w.subresource}` : ""
  } ${w.namespace}/${w.name} ${w.code}${w.body === undefined ? "" : ` ${statusSaid(w.body)}`}`;
}

/** A status write's body in short: generation, state, and each condition's status and reason. */
function statusSaid(body: unknown): string {
  const s = (body as {
    status?: {
      observedGeneration?: number;
      state?: string;
      conditions?: { type?: string; status?: string; reason?: string }[];
    };
  })?.status;
  if (!s) return "(no status)";
  const conditions = (s.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);
  return `[generation ${s.observedGeneration} ${s.state} ${conditions.join(" ")}]`;
}

/** A status as written, its times aside (a condition's lastTransitionTime moves only with it). */
function statusContent(body: unknown): string {
  return JSON.stringify(
    (body as { status?: unknown })?.status ?? null,
    (k, v) => k.endsWith("Time") ? undefined : v,
  );
}

/** The object and subresource a write is of, as {@link duplicateWrites} names it. */
function writeKey(w: PodWrite): string {
  return `${w.resource}/${w.subresource} ${w.namespace}/${w.name}`;
}

/**
 * Successful state writes (not {@link NOT_STATE}) that repeat one already made, one line each. A
 * write whose body the audit log holds (a RateLimit's status) repeats when it says what the
 * object's previous status write said, times aside: a status that changed (a failure seen, then
 * Ready again) is news, the same one twice is not. Any other write repeats when its object was
 * written more often than its RateLimit got new generations in the window (`generations`, by
 * name; at least once).
 */
export function duplicateWrites(
  writes: readonly PodWrite[],
  generations: ReadonlyMap<string, number> = new Map(),
): string[] {
  const per = new Map<string, PodWrite[]>();
  for (const w of writes) {
    if (NOT_STATE.has(w.resource) || w.code < 200 || w.code > 299) continue;
    const key = writeKey(w);
    per.set(key, [...per.get(key) ?? [], w]);
  }
  const out: string[] = [];
  for (const [key, ws] of per) {
    if (ws.every((w) => w.body !== undefined)) {
      for (let k = 1; k < ws.length; k++) {
        if (statusContent(ws[k].body) === statusContent(ws[k - 1].body)) {
          out.push(
            `${key}: the write at ${new Date(ws[k].at).toISOString()} says what the one at ${
              new Date(ws[k - 1].at).toISOString()
            } said`,
          );
        }
      }
      continue;
    }
    const allowed = Math.max(1, generations.get(ws[0].name) ?? 0);
    if (ws.length > allowed) out.push(`${key}: ${ws.length} writes for ${allowed} change(s)`);
  }
  return out;
}

/**
 * Waits until the operator has written nothing for `quietMs`, then asserts it writes nothing of
 * state for `forMs` more: converged, at rest.
 */
export async function assertAtRest(env: E2E, quietMs = 5_000, forMs = 5_000): Promise<void> {
  await waitFor(`${quietMs} ms without operator writes`, async () => {
    const w = await operatorWrites(env, Date.now() - quietMs);
    return w.filter((x) => !NOT_STATE.has(x.resource)).length === 0;
  }, { timeoutMs: 60_000, intervalMs: 1_000 });
  const from = Date.now();
  await sleep(forMs);
  const w = (await operatorWrites(env, from)).filter((x) => !NOT_STATE.has(x.resource));
  assert.deepEqual(w.map(line), [], "the operator writes nothing at rest");
}

/** The Pod's log lines (JSON) with `msg` matching `re`, and their times (epoch ms). */
export async function logLines(
  env: E2E,
  pod: string,
  re: RegExp,
): Promise<{ at: number; line: string }[]> {
  const text = await env.kube.must(["logs", "-n", DEPLOYED.namespace, pod]);
  const out: { at: number; line: string }[] = [];
  for (const l of text.split("\n")) {
    if (!re.test(l)) continue;
    try {
      const o = JSON.parse(l) as { time?: string; ts?: string };
      out.push({ at: Date.parse(o.time ?? o.ts ?? ""), line: l });
    } catch {
      out.push({ at: NaN, line: l });
    }
  }
  return out;
}

/**
 * State writes (not {@link NOT_STATE}) by a Pod that was not the Lease's holder when the write
 * arrived, as `sampler` saw the Lease: the holder of the last sample before the write, or of the
 * first after it (a write right after a takeover may come before the sample that shows it).
 */
export function nonLeaderWrites(writes: readonly PodWrite[], sampler: LeaseSampler): PodWrite[] {
  const seen = sampler.samples.filter((s) => s.lease?.holder);
  return writes.filter((w) => {
    if (NOT_STATE.has(w.resource)) return false;
    const before = seen.findLast((s) => s.at <= w.at)?.lease?.holder;
    const after = seen.find((s) => s.at > w.at)?.lease?.holder;
    return w.pod !== before && w.pod !== after;
  });
}

let editSequence = 0;

/**
 * The next edit of the run's edit loads: RateLimits round-robin from {@link REAL_PODS} on, each
 * edit a value never used before (a new generation, whichever load makes it).
 */
export function nextEdit(count = COUNT): { i: number; maxTokens: number } {
  const k = editSequence++;
  return { i: REAL_PODS + (k % (count - REAL_PODS)), maxTokens: 1_000 + k };
}

/** One edit an {@link EditLoad} sent: when (epoch ms), whose, the value, and whether it was accepted. */
export interface EditSent {
  at: number;
  name: string;
  maxTokens: number;
  /** Answered with success; false: refused or unanswered (which may still have landed). */
  ok: boolean;
}

/**
 * Edits RateLimits round-robin (from {@link REAL_PODS} on) every `everyMs` until stopped, going
 * on through API server outages (a refused edit is followed by the next); counts the edits made to
 * each and records every edit sent.
 */
export class EditLoad {
  /** Edits that were accepted, by RateLimit name. */
  readonly edits = new Map<string, number>();
  /** Every edit sent, in the order sent. */
  readonly sent: EditSent[] = [];
  failed = 0;
  /** Each RateLimit's generation before the load's first edit, by name. */
  readonly before: Promise<Map<string, number>>;
  #stop = false;
  #done: Promise<void>;

  constructor(env: E2E, everyMs = 200, count = COUNT) {
    const before = generationsOf(env);
    this.before = before;
    this.#done = (async () => {
      await before;
      while (!this.#stop) {
        const { i, maxTokens } = nextEdit(count);
        const name = workloadName(i);
        const at = Date.now();
        let ok = false;
        try {
          await editRateLimit(env, i, maxTokens);
          this.edits.set(name, (this.edits.get(name) ?? 0) + 1);
          ok = true;
        } catch {
          this.failed++;
        }
        this.sent.push({ at, name, maxTokens, ok });
        await sleep(everyMs);
      }
    })();
  }

  /** Stops; resolves once the last edit settled. */
  async stop(): Promise<void> {
    this.#stop = true;
    await this.#done;
  }

  /** Accepted edits in all. */
  get total(): number {
    return [...this.edits.values()].reduce((a, b) => a + b, 0);
  }
}

/**
 * Runs `fault` under an edit load (`load`, or one every 200 ms) with the Lease sampled; then waits
 * for convergence and checks the writes since the fault began: each object may be written once for
 * each new generation the API server gave its RateLimit meanwhile (read before and after, so that
 * an edit left unanswered by a restarting API server that landed all the same counts as the change
 * it is; "before" is before the load's first edit). Returns the time to converge after the fault
 * ended.
 */
export async function underLoad(
  env: E2E,
  what: string,
  fault: () => Promise<void>,
  load: EditLoad = new EditLoad(env),
): Promise<number> {
  const before = await load.before;
  const sampler = new LeaseSampler(env);
  const t0 = Date.now();
  let ended = 0;
  try {
    await fault();
    ended = Date.now();
  } finally {
    await load.stop();
  }
  // The Lease is sampled until the writes judged below are over: a fault can move the lead
  // (etcd down past the renew deadline), and the new leader's writes come after the fault.
  try {
    await waitConverged(env, `after ${what}`);
  } finally {
    await sampler.stop().catch(() => {});
  }
  const recover = Date.now() - ended;
  const generations = new Map<string, number>();
  for (const [name, g] of await generationsOf(env)) {
    generations.set(name, g - (before.get(name) ?? g));
  }
  const writes = await operatorWrites(env, t0);
  // A write the fence refused (403) at the heal of a partition was not made: not counted.
  const foreign = nonLeaderWrites(writes, sampler).filter((w) => w.code >= 200 && w.code < 300);
  const dup = duplicateWrites(writes, generations);
  const state = writes.filter((w) => !NOT_STATE.has(w.resource));
  const unedited = state.filter((w) => !generations.get(w.name));
  figure(
    `${what}: fault ${ended - t0} ms; ${load.total} edits accepted (${load.failed} refused ` +
      `or unanswered; ${[...generations.values()].reduce((a, b) => a + b, 0)} new generations); ` +
      `converged ${recover} ms after the fault ended; ${state.length} state writes ` +
      `(${unedited.length} of objects not edited); ` +
      `holders ${sampler.holders.join(" -> ")}; longest Lease gap ${sampler.longestGapMs} ms; ` +
      `non-leader writes ${foreign.length}; duplicates ${dup.length}${
        dup.length ? ` (${dup.join("; ")})` : ""
      }`,
  );
  // Each repeated write shown with the object's other writes in the window (the audit log's).
  for (const d of dup) {
    const [key] = d.split(":");
    const shown = writes.filter((w) => writeKey(w) === key);
    figure(`${d}:\n${shown.map(line).join("\n")}`);
  }
  assert.deepEqual(foreign.map(line), [], "no write by a replica that did not lead");
  // Nothing written that repeats a write already made: no EnvoyFilter or finalizer patch beyond its
  // RateLimit's new generations, no status that says again what the last one said.
  assert.deepEqual(dup, [], "no duplicate write");
  return recover;
}

/**
 * The suites' first step: deploy/ on the real node ({@link deployOperator}) with the load of
 * {@link COUNT} RateLimits, at rest; resolves with the two Pods.
 */
export async function deployedWithLoad(env: E2E, t: Deno.TestContext): Promise<PodView[]> {
  let pods: PodView[] = [];
  await env.step(t, `deploy/ on the real node; ${COUNT} RateLimits Ready`, async () => {
    pods = await deployOperator(env);
    await createLoad(env);
    await assertAtRest(env);
  });
  return pods;
}
