/**
 * What one operator process learns from the simulated istiod (sim/istiod.ts): the ProxyStatus
 * objects the real poller (src/kube/istiod_source.ts, which the simulator may not import: it is of
 * the kube layer) publishes into the LocalSource its Manager serves, built with the same builders
 * of src/api/istiod.ts. The feed keeps the poller's rules, on the process's own clock (a crash
 * freezes it):
 *
 * - a round asks istiod's syncz; a proxy that is Acked and concerns a RateLimit (`wants`) has its
 *   dump read once per acknowledged push, through `heldLimitsOf`; the record is `confirmed` by a
 *   later round, at least {@link DEFAULT_FOLLOW_UP_MS} after the dump, that shows the same push; a
 *   reading of another push than the one acknowledged now is not published; a new reading with the
 *   same limits as a confirmed one stays confirmed;
 * - rounds come a {@link DEFAULT_PERIOD_MS} apart, a follow-up sooner while a record is unconfirmed;
 *   when the operator's cached EnvoyFilters change (looked at on the poller's one-second grid), a
 *   round comes at once and {@link SETTLE_ROUNDS} more follow a second apart;
 * - while istiod cannot be asked, istiod's own ProxyStatus says why, the proxies stay as last
 *   published, and the next try comes a {@link DEFAULT_FOLLOW_UP_MS} later, then each twice as late,
 *   up to {@link DEFAULT_PERIOD_MS}.
 *
 * The figures are the poller's defaults; tests/sim checks they agree.
 */
import {
  ackedKey,
  DEFAULT_FOLLOW_UP_MS,
  DEFAULT_PERIOD_MS,
  heldLimitsOf,
  type HeldRecord,
  ISTIOD_STATUS_NAME,
  istiodStatusObject,
  podOfProxy,
  PROXY_STATUS,
  proxyStatusObject,
  retryWaitMs,
  SETTLE_ROUNDS,
  verdictOf,
} from "../src/api/istiod.ts";
import type { KubeObject } from "../src/api/object.ts";
import { LOCAL_RATELIMIT_FILTER } from "../src/dataplane/mod.ts";
import { STAT_PREFIX } from "../src/reconcile/ratelimit/render.ts";
import type { LocalSource } from "../src/runtime/mod.ts";
import type { ClockView, TimerHandle } from "./clock.ts";
import type { SimIstiod } from "./istiod.ts";

/** A dump read for a proxy, at the push it had acknowledged then. */
interface Reading {
  acked: string;
  record: HeldRecord;
  at: number;
  /** Not yet seen by a round late enough to confirm it. */
  recheck: boolean;
}

/** Settings of one process's feed. */
export interface FeedOptions {
  istiod: SimIstiod;
  /** Where the ProxyStatus objects go (served by the process's Manager); of type PROXY_STATUS. */
  source: LocalSource;
  clock: ClockView;
  /** The operator's namespace: istiod's own ProxyStatus is kept there. */
  namespace: string;
  /** True when a RateLimit concerns the Pod (its proxy is read in depth). */
  wants: (pod: { namespace: string; name: string }) => boolean;
  /** A token of the operator's cached EnvoyFilters: when it moves, rounds hurry. */
  token: () => unknown;
}

/** One operator process's view of istiod, published into `source`. */
export class ProxyStatusFeed {
  readonly source: LocalSource;
  readonly #o: FeedOptions;
  readonly #read = new Map<string, Reading>();
  #timer: TimerHandle | undefined;
  #look: TimerHandle | undefined;
  #settle = 0;
  /** Rounds failed in a row. */
  #failures = 0;
  #failing = false;
  #lastRound = 0;
  #seen: unknown;
  #stopped = false;

  constructor(opts: FeedOptions) {
    if (opts.source.type !== PROXY_STATUS) throw new Error("the source must hold ProxyStatus");
    this.#o = opts;
    this.source = opts.source;
  }

  /** The first round at once, as the operator starts its poller. */
  start(): void {
    this.#seen = this.#token();
    this.#at(0);
  }

  /** No more rounds. */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#look?.cancel();
  }

  /**
   * The EnvoyFilters changed in the cluster: the poller looks at its cache's list at its next
   * one-second step (not while backing off), and hurries when it moved.
   */
  filtersChanged(): void {
    if (this.#stopped || this.#failing || this.#look) return;
    const now = this.#o.clock.now();
    const step = DEFAULT_FOLLOW_UP_MS - ((now - this.#lastRound) % DEFAULT_FOLLOW_UP_MS);
    this.#look = this.#o.clock.after(step, () => {
      this.#look = undefined;
      const token = this.#token();
      if (token === this.#seen || this.#failing) return;
      this.#seen = token;
      this.#settle = SETTLE_ROUNDS;
      this.#at(0);
    });
  }

  #token(): unknown {
    try {
      return this.#o.token();
    } catch {
      return undefined;
    }
  }

  #at(ms: number): void {
    if (this.#stopped) return;
    this.#timer?.cancel();
    this.#timer = this.#o.clock.after(ms, () => {
      this.#timer = undefined;
      this.#round();
    });
  }

  #round(): void {
    const { istiod, namespace, clock } = this.#o;
    const now = clock.now();
    this.#lastRound = now;
    const outage = istiod.outage();
    if (outage) {
      const last = this.source.list().items.filter((x) =>
        x.metadata.namespace !== namespace || x.metadata.name !== ISTIOD_STATUS_NAME
      );
      this.source.publish([
        ...last,
        istiodStatusObject(namespace, { reachable: false, ...outage }),
      ]);
      this.#failing = true;
      this.#failures++;
      this.#at(retryWaitMs(this.#failures, DEFAULT_FOLLOW_UP_MS, DEFAULT_PERIOD_MS));
      return;
    }
    this.#failing = false;
    this.#failures = 0;
    const proxies = istiod.syncz();
    const present = new Set(proxies.map((p) => p.id));
    for (const id of this.#read.keys()) if (!present.has(id)) this.#read.delete(id);
    const objects: KubeObject[] = [];
    for (const p of proxies) {
      const pod = podOfProxy(p.id);
      const key = ackedKey(p);
      if (!pod || verdictOf(p).state !== "Acked" || !this.#o.wants(pod)) {
        this.#read.delete(p.id);
      } else {
        const r = this.#read.get(p.id);
        if (r?.acked !== key) this.#read.set(p.id, this.#reading(p.id, key, r, now));
        else if (r.recheck && now - r.at >= DEFAULT_FOLLOW_UP_MS) {
          r.recheck = false;
          if ("limits" in r.record) r.record = { ...r.record, confirmed: true };
        }
      }
      const r = this.#read.get(p.id);
      const obj = proxyStatusObject(p, r?.acked === key ? r.record : undefined);
      if (obj) objects.push(obj);
    }
    objects.push(istiodStatusObject(namespace, { reachable: true, proxies: proxies.length }));
    this.source.publish(objects);
    const unconfirmed = [...this.#read.values()].some((r) => r.recheck);
    const wait = unconfirmed || this.#settle > 0 ? DEFAULT_FOLLOW_UP_MS : DEFAULT_PERIOD_MS;
    if (this.#settle > 0) this.#settle--;
    this.#at(wait);
  }

  /** A new reading of a proxy's dump at push `acked`, confirmed if it repeats a confirmed one. */
  #reading(id: string, acked: string, before: Reading | undefined, now: number): Reading {
    const dump = this.#o.istiod.dump(id);
    const held = heldLimitsOf(dump, LOCAL_RATELIMIT_FILTER, STAT_PREFIX);
    const was = before?.record;
    const repeats = was !== undefined && "limits" in was && was.confirmed &&
      JSON.stringify(was.limits) === JSON.stringify(held.limits) &&
      was.unreadable === held.unreadable;
    return { acked, record: { ...held, confirmed: repeats }, at: now, recheck: true };
  }
}
