/**
 * What asking istiod costs at scale (issue 42, point 3): N RateLimits on N proxies, each Pod's
 * proxy a stand-in speaking xDS to a real istiod, the operator asking istiod through a counting
 * proxy (bench/istiod_counter.ts). Measured:
 *
 * - apply to `Accepted=True`: each RateLimit timed from just before its create request to the
 *   first watch event showing its Accepted condition True, all N created at once (p50, p99, max;
 *   apply to Ready beside it);
 * - the requests the operator made to istiod meanwhile, and at rest: a window of at least two
 *   minutes once no config dump has been asked for a while, counted on the wire by kind (syncz,
 *   config_dump), with the operator's CPU and resident memory over the same window;
 * - one edit at a time among N Accepted: apply to Accepted at the new generation, the config
 *   dumps it cost, and how many other RateLimits' Accepted left True meanwhile.
 *
 * One RateLimit per Pod (the convergence benches' fixture, 4 rules), spread over a few namespaces
 * with one Service each (so every sidecar has an inbound HTTP chain the filter patches). istiod
 * pushes an EnvoyFilter's change to every proxy of its namespace, so the namespaces' size is what
 * an edit costs in dumps; it is printed with the figures.
 */
import { join } from "node:path";
import type { KubeObject } from "../src/api/object.ts";
import { RESOURCES } from "../src/api/resources.ts";
import { inParallel } from "../src/runtime/mod.ts";
import {
  proxyOfPod,
  type ProxySpec,
  type ProxyStandin,
  startProxyStandin,
} from "../tools/istio-check/proxy-standin/mod.ts";
import { OperatorProcess } from "../tools/operator/process.ts";
import { OPERATOR_USER } from "../tools/cluster/mod.ts";
import { BENCH_DIR, BenchCluster, retrying, until } from "./cluster/env.ts";
import { conditionOf, followRateLimits, Waiters } from "./cluster/follow.ts";
import { writesByResource } from "./cluster/phases.ts";
import {
  cpuSeconds,
  loadAverage,
  memoryOf,
  OPERATOR_ROOT_ENV,
  waitReady,
} from "./cluster/operator.ts";
import { BENCH_LABEL, podManifest, rateLimitObject, workloadName } from "./fixtures.ts";
import { countRequests, IstiodCounter, type RequestCounts } from "./istiod_counter.ts";
import type { Report } from "./report.ts";
import { fmt, median, percentile } from "./stats.ts";

/** Sizes and windows of the istiod bench. */
export interface IstiodCostOptions {
  /** Pods, proxies and RateLimits (one RateLimit per Pod). */
  proxies: number;
  /** Namespaces they are spread over, one Service each. */
  namespaces: number;
  /** Rules of each RateLimit. */
  rules: number;
  /** Create requests in flight. */
  width: number;
  /** The window at rest. */
  restMs: number;
  /** No config dump for this long before the window starts... */
  quietMs: number;
  /** ...waited for at most this long (a poller that never stops reading fails the run). */
  quietBoundMs: number;
  /** Longest wait for all Accepted (and for one edit, at most 3 minutes). */
  acceptBoundMs: number;
  /** Edits timed one at a time after the window. */
  edits: number;
  /** The control plane's directory. */
  dir: string;
  /** Where the operator's log goes. */
  logDir: string;
  /** The tree to run the operator from (default: this one). */
  root?: string;
}

/** Default sizes: `quick` (CI with --cluster) or the full run; `proxies` overrides the count. */
export function istiodCostOptions(quick: boolean, proxies?: number): IstiodCostOptions {
  const n = proxies ?? (quick ? 20 : 1_000);
  return {
    proxies: n,
    namespaces: Math.max(1, Math.min(4, n)),
    rules: 4,
    width: 16,
    // At least two minutes at full size: eight poll periods of 15 s and more.
    restMs: quick ? 30_000 : 180_000,
    quietMs: quick ? 5_000 : 20_000,
    quietBoundMs: 300_000,
    acceptBoundMs: 1_800_000,
    edits: quick ? 3 : 10,
    dir: join(BENCH_DIR, "istiod"),
    logDir: join(BENCH_DIR, "logs"),
    ...(Deno.env.get(OPERATOR_ROOT_ENV) ? { root: Deno.env.get(OPERATOR_ROOT_ENV) } : {}),
  };
}

/** The operator's API writes in a span (audit log): how many, and by verb and resource. */
export interface Writes {
  count: number;
  by: string;
}

/** The operator's API writes received in [from, to) (epoch ms), from the audit log. */
async function writesBetween(env: BenchCluster, from: number, to: number): Promise<Writes> {
  const all = await env.handle.writes({ user: OPERATOR_USER, sinceMs: from });
  const mine = all.filter((w) => Date.parse(w.requestReceivedTimestamp) < to);
  return { count: mine.length, by: writesByResource(mine) };
}

/** CPU seconds of each process over a span. */
export interface CpuSpan {
  operator: number;
  istiod: number;
  standin: number;
}

/** What one run measured (ms unless named). */
export interface IstiodCostRun {
  proxies: number;
  namespaces: number;
  /** Control plane and istiod up; Pods created and running; every proxy synced. */
  upMs: number;
  podsMs: number;
  proxiesSyncedMs: number;
  /** Creating the RateLimits alone. */
  createdMs: number;
  /** Apply to Ready and to Accepted True, one per RateLimit seen so. */
  readyMs: number[];
  acceptedMs: number[];
  /** RateLimits never seen Accepted True within the bound, with their Accepted reason last seen. */
  notAccepted: string[];
  /** First apply to the last Accepted: the requests and CPU of that span. */
  burst: { ms: number; requests: RequestCounts; cpu: CpuSpan; writes: Writes };
  /** The window at rest. */
  rest: {
    ms: number;
    /** Waited for quiet before it. */
    quietAfterMs: number;
    requests: RequestCounts;
    cpu: CpuSpan;
    /** Operator VmRSS sampled every 5 s: the largest and the last; VmHWM at the end. */
    rssMaxMb: number;
    rssLastMb: number;
    peakMb: number;
    /** Times a RateLimit's Accepted left True during the window. */
    flaps: number;
    writes: Writes;
  };
  /** One edit at a time: apply to Accepted at the new generation, dumps it cost, flaps. */
  edits: { ms: number[]; dumps: number[]; flaps: number[]; writes: Writes[]; missed: number };
  /** What Accepted said when it left True (the whole run), by reason: how often, one message. */
  flapReasons: Record<string, { count: number; example: string }>;
  /** Namespace sizes (proxies a namespace). */
  perNamespace: number;
  /** The machine's load average (1, 5, 15 min) at the start, at the last Accepted, after the window. */
  load: string[];
  /** Every request the operator made to istiod, seconds from the first apply (for reading). */
  timeline: { kind: string; at: number; ms: number; bytes: number; status: number }[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const isAccepted = (o: KubeObject) => conditionOf(o, "Accepted")?.status === "True";

/** RateLimits of some namespaces, followed: when each was first Ready and first Accepted. */
class AcceptedWatch {
  readonly readyAt = new Map<string, number>();
  readonly acceptedAt = new Map<string, number>();
  readonly latest = new Map<string, { obj: KubeObject; at: number }>();
  /** Times each RateLimit seen Accepted True was later seen otherwise. */
  readonly flapsOf = new Map<string, number>();
  /** What Accepted said when it left True, by reason: how often, and one message. */
  readonly flapReasons = new Map<string, { count: number; example: string }>();
  readonly #stop = new AbortController();
  #tasks: Promise<void>[] = [];
  readonly #waiters = new Waiters();

  async start(env: BenchCluster, namespaces: readonly string[]): Promise<void> {
    await Promise.all(namespaces.map((ns) =>
      new Promise<void>((listed, failed) => {
        this.#tasks.push(
          followRateLimits(env.api, ns, (o) => this.#see(o), this.#stop.signal, listed)
            .catch(failed),
        );
      })
    ));
  }

  #see(obj: KubeObject): void {
    const at = performance.now();
    const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
    const before = this.latest.get(key)?.obj;
    if (before && isAccepted(before) && !isAccepted(obj)) {
      this.flapsOf.set(key, (this.flapsOf.get(key) ?? 0) + 1);
      const c = conditionOf(obj, "Accepted");
      const reason = `${c?.status ?? "none"} ${c?.reason ?? ""}`.trim();
      const seen = this.flapReasons.get(reason);
      if (seen) seen.count++;
      else this.flapReasons.set(reason, { count: 1, example: (c?.message ?? "").slice(0, 200) });
    }
    this.latest.set(key, { obj, at });
    if ((obj.status as { state?: string } | undefined)?.state === "Ready") {
      if (!this.readyAt.has(key)) this.readyAt.set(key, at);
    }
    if (isAccepted(obj) && !this.acceptedAt.has(key)) this.acceptedAt.set(key, at);
    this.#waiters.wake();
  }

  /** Resolves once `done()` holds after an event (or at once); false at `deadline`. */
  async until(done: () => boolean, deadline: number): Promise<boolean> {
    return await this.#waiters.until(() => done() || undefined, deadline) === true;
  }

  /** Times any RateLimit's Accepted left True so far, but `except`'s. */
  flaps(except?: string): number {
    let n = 0;
    for (const [k, v] of this.flapsOf) if (k !== except) n += v;
    return n;
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await Promise.all(this.#tasks);
  }
}

/** The namespace of the k-th of `count`. */
const namespaceName = (k: number) => `istiod-bench-${k}`;

/** A Service in front of every bench Pod of `namespace`: port 8000 to the Pods' `http`. */
function serviceObject(namespace: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "mesh-bench",
      namespace,
      labels: { [BENCH_LABEL.key]: BENCH_LABEL.value },
    },
    spec: {
      selector: { [BENCH_LABEL.key]: BENCH_LABEL.value },
      ports: [{ name: "http", port: 8000, targetPort: "http" }],
    },
  };
}

/** The bench's Pod `i` (injected, on the bench node) with an `http` port the Service targets. */
function meshPod(i: number, namespace: string): KubeObject {
  const pod = podManifest(i, namespace);
  const spec = pod.spec as { containers: Record<string, unknown>[] };
  return {
    ...pod,
    spec: {
      ...spec,
      containers: spec.containers.map((c) => ({
        ...c,
        ports: [{ name: "http", containerPort: 8080, protocol: "TCP" }],
      })),
    },
  };
}

/** The CPU seconds of the three processes now. */
async function cpuNow(pids: { operator: number; istiod: number; standin: number }) {
  const [operator, istiod, standin] = await Promise.all([
    cpuSeconds(pids.operator),
    cpuSeconds(pids.istiod),
    cpuSeconds(pids.standin),
  ]);
  return { operator, istiod, standin };
}

const cpuSince = (a: CpuSpan, b: CpuSpan): CpuSpan => ({
  operator: b.operator - a.operator,
  istiod: b.istiod - a.istiod,
  standin: b.standin - a.standin,
});

/**
 * Connections made so far when every proxy is connected with each type acknowledged at a version;
 * undefined while one is not.
 */
async function allSynced(standin: ProxyStandin, n: number): Promise<number | undefined> {
  const views = await standin.proxies();
  const synced = views.filter((v) =>
    v.connected &&
    (["CDS", "EDS", "LDS", "RDS"] as const).every((t) => v.xds[t].acked && v.xds[t].version !== "")
  );
  return synced.length === n ? synced.reduce((k, v) => k + v.connects, 0) : undefined;
}

/** Runs the bench once: a control plane with istiod, N Pods and proxies, the operator. */
export async function measureIstiodCost(
  o: IstiodCostOptions,
  say: (line: string) => void,
): Promise<IstiodCostRun> {
  const n = o.proxies;
  const spaces = Math.max(1, Math.min(o.namespaces, n));
  const namespaces = Array.from({ length: spaces }, (_, k) => namespaceName(k));
  /** Pod i's namespace: round robin, so each namespace has n / spaces. */
  const nsOf = (i: number) => namespaces[i % spaces];
  const load = [await loadAverage()];
  const t0 = performance.now();
  const env = await BenchCluster.up((m) => say(`[cluster] ${m}`), { dir: o.dir, mesh: true });
  const istiod = env.handle.istiod;
  let standin: ProxyStandin | undefined;
  let operator: OperatorProcess | undefined;
  let counter: IstiodCounter | undefined;
  const watch = new AcceptedWatch();
  try {
    if (!istiod) throw new Error("up({ mesh: true }) gave no istiod");
    const upMs = performance.now() - t0;
    say(`control plane and istiod up in ${fmt(upMs / 1000, 1)} s`);

    // Pods and Services; the Pods' IPs (kwok's) are the proxies' addresses.
    const t1 = performance.now();
    for (const ns of namespaces) await env.namespace(ns);
    await env.createAll(namespaces.map(serviceObject), o.width, [RESOURCES.Service]);
    await env.createAll(Array.from({ length: n }, (_, i) => meshPod(i, nsOf(i))), o.width);
    const pods = await until(
      `${n} Pods running with an IP`,
      async () => {
        const all: KubeObject[] = [];
        for (const ns of namespaces) {
          let cont: string | undefined;
          do {
            const page = await env.api.list(RESOURCES.Pod, {
              namespace: ns,
              limit: 500,
              ...(cont ? { continue: cont } : {}),
            });
            all.push(...page.items);
            cont = page.continue;
          } while (cont);
        }
        const up = all.filter((p) =>
          (p.status as { podIP?: string; phase?: string } | undefined)?.podIP &&
          (p.status as { phase?: string }).phase === "Running"
        );
        return up.length === n ? up : undefined;
      },
      600_000,
      1_000,
    );
    const podsMs = performance.now() - t1;
    say(`${fmt(n)} Pods running in ${spaces} namespaces in ${fmt(podsMs / 1000, 1)} s`);

    // The proxies: one stand-in process, one ADS stream each.
    const t2 = performance.now();
    const specs: ProxySpec[] = pods.map((p) =>
      proxyOfPod(p as unknown as Parameters<typeof proxyOfPod>[0])
    );
    standin = await startProxyStandin(istiod.xds, specs, (m) => say(`[stand-in] ${m}`));
    const sa = standin;
    // Synced, and no proxy connected again for a while (istiod refuses streams beyond its rate,
    // and a refused proxy retries, as Envoy does).
    let connects: number | undefined;
    await until(
      `${n} proxies synced and settled`,
      async () => {
        const now = await allSynced(sa, n);
        const settled = now !== undefined && now === connects;
        connects = now;
        return settled;
      },
      900_000,
      Math.min(5_000, o.quietMs),
    );
    const proxiesSyncedMs = performance.now() - t2;
    say(`${fmt(n)} proxies connected and synced in ${fmt(proxiesSyncedMs / 1000, 1)} s`);

    // The operator, asking istiod through the counter.
    counter = IstiodCounter.start(istiod.debug);
    const tokenFile = join(o.logDir, `istiod-token-${Deno.pid}`);
    await Deno.mkdir(o.logDir, { recursive: true });
    await Deno.writeTextFile(tokenFile, await istiod.token("platform-system", "platform-operator"));
    operator = await OperatorProcess.start({
      kubeconfig: env.handle.operatorKubeconfig,
      identity: "istiod-cost",
      logDir: o.logDir,
      logLevel: "info",
      ...(o.root ? { root: o.root } : {}),
      extraArgs: [
        "--controllers=ratelimit",
        `--istiod-url=${counter.url}`,
        `--istiod-token-file=${tokenFile}`,
      ],
    });
    await waitReady(operator);
    const pids = { operator: operator.pid, istiod: istiod.pid, standin: standin.pid };
    await watch.start(env, namespaces);

    // N RateLimits at once, each timed from just before its create.
    const objects = Array.from(
      { length: n },
      (_, i) => rateLimitObject({ i, rules: o.rules, namespace: nsOf(i) }),
    );
    const appliedAt = new Map<string, number>();
    const cpu0 = await cpuNow(pids);
    const first = performance.now();
    const firstEpoch = Date.now();
    await inParallel(objects, o.width, async (obj) => {
      appliedAt.set(`${obj.metadata.namespace}/${obj.metadata.name}`, performance.now());
      await retrying(() => env.api.create(RESOURCES.RateLimit, obj));
    });
    const createdMs = performance.now() - first;
    say(`${fmt(n)} RateLimits created in ${fmt(createdMs / 1000, 1)} s`);
    await watch.until(() => watch.acceptedAt.size >= n, first + o.acceptBoundMs);
    const cpu1 = await cpuNow(pids);
    load.push(await loadAverage());
    const lastAccepted = Math.max(first, ...watch.acceptedAt.values());
    const since = (m: Map<string, number>) =>
      [...m].flatMap(([k, at]) => appliedAt.has(k) ? [at - appliedAt.get(k)!] : []);
    const notAccepted = [...appliedAt.keys()].filter((k) => !watch.acceptedAt.has(k)).map((k) => {
      const c = watch.latest.get(k)?.obj;
      return `${k}: ${c ? conditionOf(c, "Accepted")?.reason ?? "no Accepted" : "never seen"}`;
    });
    const burst = {
      ms: lastAccepted - first,
      requests: countRequests(counter.between(first, lastAccepted)),
      cpu: cpuSince(cpu0, cpu1),
      writes: await writesBetween(env, firstEpoch, firstEpoch + (lastAccepted - first)),
    };
    say(
      `${fmt(watch.acceptedAt.size)} of ${fmt(n)} Accepted, the last ${
        fmt(burst.ms / 1000, 1)
      } s after the first apply`,
    );

    // At rest: once no config dump was asked for quietMs, a window of restMs.
    const c = counter;
    const quietStart = performance.now();
    const dumps = () => c.requests.filter((r) => r.kind === "config_dump");
    await until(
      `no config dump for ${s1(o.quietMs)} s`,
      () => {
        const lastDump = dumps().at(-1)?.at ?? 0;
        return Promise.resolve(performance.now() - Math.max(lastDump, lastAccepted) >= o.quietMs);
      },
      o.quietBoundMs,
      1_000,
    ).catch((e) => {
      const since = dumps().filter((r) => r.at > lastAccepted).length;
      throw new Error(
        `${
          (e as Error).message
        }: the operator kept asking istiod for config dumps after the wait ` +
          `for Accepted (${watch.acceptedAt.size} of ${n} Accepted; ${since} dumps since)`,
      );
    });
    const quietAfterMs = performance.now() - quietStart;
    const restFlaps0 = watch.flaps();
    const cpuR0 = await cpuNow(pids);
    const r0 = performance.now();
    const r0Epoch = Date.now();
    const rss: number[] = [];
    while (performance.now() - r0 < o.restMs) {
      rss.push((await memoryOf(pids.operator)).rssMb);
      await sleep(Math.min(5_000, o.restMs - (performance.now() - r0)));
    }
    const r1 = performance.now();
    const cpuR1 = await cpuNow(pids);
    const mem = await memoryOf(pids.operator);
    load.push(await loadAverage());
    rss.push(mem.rssMb);
    const rest = {
      ms: r1 - r0,
      quietAfterMs,
      requests: countRequests(c.between(r0, r1)),
      cpu: cpuSince(cpuR0, cpuR1),
      rssMaxMb: Math.max(...rss),
      rssLastMb: mem.rssMb,
      peakMb: mem.peakMb,
      flaps: watch.flaps() - restFlaps0,
      writes: await writesBetween(env, r0Epoch, r0Epoch + (r1 - r0)),
    };
    say(
      `at rest ${
        fmt(rest.ms / 1000)
      } s: ${rest.requests.syncz} syncz, ${rest.requests.configDump} config dumps`,
    );

    // One edit at a time, spread over the namespaces.
    const edits = {
      ms: [] as number[],
      dumps: [] as number[],
      flaps: [] as number[],
      writes: [] as Writes[],
      missed: 0,
    };
    for (let k = 0; k < Math.min(o.edits, n); k++) {
      // Spread over the order istiod lists proxies in, and over the namespaces in turn.
      const i = Math.min(n - 1, Math.floor((k * n) / Math.min(o.edits, n)) + (k % spaces));
      const ns = nsOf(i);
      const name = workloadName(i);
      const key = `${ns}/${name}`;
      const flaps0 = watch.flaps(key);
      const e0 = performance.now();
      const e0Epoch = Date.now();
      const written = await env.api.patch(RESOURCES.RateLimit, ns, name, [
        { op: "replace", path: "/spec/local/defaultBucket/maxTokens", value: 200 + k },
      ]);
      const gen = written.metadata.generation ?? 0;
      const atGen = () => {
        const l = watch.latest.get(key)?.obj;
        const cond = l && conditionOf(l, "Accepted");
        return l !== undefined && cond?.status === "True" &&
          (cond.observedGeneration ?? 0) >= gen &&
          Number((l.status as { enforcedGeneration?: number }).enforcedGeneration ?? 0) >= gen;
      };
      const seen = await watch.until(atGen, e0 + Math.min(o.acceptBoundMs, 180_000));
      if (!seen) {
        edits.missed++;
        continue;
      }
      edits.ms.push(watch.latest.get(key)!.at - e0);
      // The dumps the edit cost: until none for a while (the namespace's proxies read again).
      await until(
        "the edit's dumps done",
        () => {
          const last = c.requests.filter((r) => r.kind === "config_dump").at(-1)?.at ?? 0;
          return Promise.resolve(
            performance.now() - Math.max(last, e0) >= Math.min(5_000, o.quietMs),
          );
        },
        300_000,
        500,
      );
      edits.dumps.push(c.between(e0).filter((r) => r.kind === "config_dump").length);
      edits.flaps.push(watch.flaps(key) - flaps0);
      edits.writes.push(await writesBetween(env, e0Epoch, Date.now()));
    }

    return {
      proxies: n,
      namespaces: spaces,
      perNamespace: Math.ceil(n / spaces),
      upMs,
      podsMs,
      proxiesSyncedMs,
      createdMs,
      readyMs: since(watch.readyAt),
      acceptedMs: since(watch.acceptedAt),
      notAccepted,
      burst,
      rest,
      edits,
      flapReasons: Object.fromEntries(watch.flapReasons),
      load,
      timeline: c.requests.map((q) => ({
        kind: q.kind,
        at: Math.round(q.at - first) / 1000,
        ms: Math.round(q.ms),
        bytes: q.bytes,
        status: q.status,
      })),
    };
  } finally {
    await watch.stop().catch(() => {});
    await operator?.stop().catch(() => {});
    await standin?.stop().catch(() => "");
    await counter?.stop().catch(() => {});
    await env.down();
  }
}

const SECTION = "istiod (real istiod, proxy stand-ins, the operator asking through a counter)";

const s1 = (ms: number) => fmt(ms / 1000, 1);
const spreadNote = (ms: number[]) =>
  `p50 ${s1(percentile(ms, 50))} s, p99 ${s1(percentile(ms, 99))} s, max ${
    s1(Math.max(...ms))
  } s (${fmt(ms.length)} seen)`;

/** Writes a run's figures into `report`. */
export function reportIstiodCost(report: Report, r: IstiodCostRun): void {
  const add = (name: string, value: number, unit: string, note: string) =>
    report.add({ section: SECTION, name, value, unit, note });
  const n = fmt(r.proxies);
  const layout = `${n} RateLimits (one a Pod) on ${n} proxies, ${r.namespaces} namespaces of ${
    fmt(r.perNamespace)
  }`;
  report.info(
    SECTION,
    `${layout}; control plane up ${s1(r.upMs)} s, Pods running ${s1(r.podsMs)} s, proxies synced ${
      s1(r.proxiesSyncedMs)
    } s; load average at the start, at the last Accepted, after the window: ${r.load.join(" / ")}`,
  );
  const missed = r.notAccepted.length
    ? `; ${r.notAccepted.length} NOT Accepted within the bound: ${
      r.notAccepted.slice(0, 5).join(", ")
    }`
    : "";
  for (const [label, p] of [["p50", 50], ["p99", 99]] as const) {
    add(
      `apply to Accepted, ${n} created at once, ${label}`,
      percentile(r.acceptedMs, p) / 1000,
      "s",
      `${spreadNote(r.acceptedMs)}${missed}; apply to Ready: ${spreadNote(r.readyMs)}; created in ${
        s1(r.createdMs)
      } s`,
    );
  }
  add(
    `apply to Accepted, ${n} created at once, max`,
    Math.max(...r.acceptedMs) / 1000,
    "s",
    `first apply to last Accepted ${s1(r.burst.ms)} s`,
  );
  const b = r.burst.requests;
  add(
    `requests to istiod, first apply to last Accepted`,
    b.syncz + b.configDump + b.other,
    "requests",
    `${fmt(b.syncz)} syncz (median answer ${fmt(b.synczMs?.median ?? NaN)} ms, ${
      fmt(b.synczBytes / 1024)
    } KiB), ${fmt(b.configDump)} config dumps (median ${
      fmt(b.configDumpMs?.median ?? NaN)
    } ms, max ${fmt(b.configDumpMs?.max ?? NaN)} ms, up to ${
      fmt(b.configDumpBytes / 1024)
    } KiB), ${b.failed} failed; CPU s: operator ${fmt(r.burst.cpu.operator, 1)}, istiod ${
      fmt(r.burst.cpu.istiod, 1)
    }, stand-in ${fmt(r.burst.cpu.standin, 1)}; operator's API writes ${
      fmt(r.burst.writes.count)
    } (${r.burst.writes.by})`,
  );
  const q = r.rest.requests;
  const perMin = (x: number) => (x * 60_000) / r.rest.ms;
  add(
    `requests to istiod a minute at rest, ${n} Accepted`,
    perMin(q.syncz + q.configDump + q.other),
    "requests",
    `${q.syncz} syncz, ${q.configDump} config dumps, ${q.other} other, ${q.failed} failed in ${
      fmt(r.rest.ms / 1000)
    } s, counted on the wire (after ${s1(r.rest.quietAfterMs)} s waiting for no dump); ${
      fmt(perMin(q.bytes) / 1024)
    } KiB a minute; syncz answered in ${fmt(q.synczMs?.median ?? NaN)} ms (median), ${
      fmt(q.synczBytes / 1024)
    } KiB; Accepted left True ${r.rest.flaps} times; operator's API writes ${
      fmt(r.rest.writes.count)
    }${r.rest.writes.count ? ` (${r.rest.writes.by})` : ""}`,
  );
  add(
    `operator CPU at rest, ${n} Accepted`,
    (r.rest.cpu.operator * 60_000) / r.rest.ms,
    "s/min",
    `${fmt(r.rest.cpu.operator, 2)} CPU s in ${fmt(r.rest.ms / 1000)} s (user + system); istiod ${
      fmt(r.rest.cpu.istiod, 2)
    } s, stand-in ${fmt(r.rest.cpu.standin, 2)} s`,
  );
  add(
    `operator resident memory at rest, ${n} Accepted`,
    r.rest.rssMaxMb,
    "MB",
    `VmRSS largest of samples every 5 s; last ${fmt(r.rest.rssLastMb, 1)} MB; peak (VmHWM) ${
      fmt(r.rest.peakMb, 1)
    } MB`,
  );
  if (r.edits.ms.length > 0) {
    add(
      `one edit among ${n} Accepted: apply to Accepted, median`,
      median(r.edits.ms) / 1000,
      "s",
      `${spreadNote(r.edits.ms)}${
        r.edits.missed ? `; ${r.edits.missed} NOT Accepted in time` : ""
      }; config dumps per edit ${r.edits.dumps.join(", ")} (namespaces of ${
        fmt(r.perNamespace)
      }); other RateLimits' Accepted left True ${r.edits.flaps.join(", ")} times${
        Object.keys(r.flapReasons).length
          ? `; it said, when it left True: ${
            Object.entries(r.flapReasons).map(([k, v]) => `${k} ×${fmt(v.count)} ("${v.example}")`)
              .join("; ")
          }`
          : ""
      }`,
    );
    const w = r.edits.writes.map((x) => x.count);
    add(
      `one edit among ${n} Accepted: the operator's API writes, median`,
      median(w),
      "writes",
      `per edit ${
        w.join(", ")
      }, from the audit log, the edit to its last config dump; the largest: ${
        r.edits.writes[w.indexOf(Math.max(...w))]?.by ?? ""
      }`,
    );
  } else if (r.edits.missed > 0) {
    report.skip(SECTION, `one edit: ${r.edits.missed} edits NOT Accepted in time`);
  }
}

/** Runs the istiod bench into `report`. */
export async function benchIstiod(report: Report, o: IstiodCostOptions): Promise<void> {
  const run = await measureIstiodCost(o, (line) => report.info(SECTION, line));
  // Every sample and request, for reading after the run.
  const raw = join(BENCH_DIR, "istiod-run.json");
  await Deno.writeTextFile(raw, JSON.stringify(run) + "\n");
  report.info(SECTION, `every sample and request: ${raw}`);
  reportIstiodCost(report, run);
}
