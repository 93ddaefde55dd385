/**
 * Asks istiod, every period, where each connected proxy stands, and publishes the answer as
 * ProxyStatus objects (src/api/istiod.ts) into a LocalSource the runtime watches. One syncz
 * request per istiod a round, whatever the number of proxies; only what changed becomes a watch
 * event, so at rest the RateLimit controller hears nothing.
 *
 * For the proxies a RateLimit selects (`wants`), it also asks what each holds: istiod's dump of the
 * listeners and routes of the push the proxy last acknowledged, read for the operator's limits,
 * once per acknowledged push. A dump is generated from the proxy's last push context, which a push
 * under way may already have moved before the next syncz shows its nonce; so a record is
 * `confirmed` only when a syncz answered at least `followUpMs` after the dump shows the same
 * acknowledged push, and a round that leaves a record unconfirmed is followed up that soon
 * instead of a period later.
 *
 * When istiod cannot be asked, istiod's own ProxyStatus says why and the proxies' stay as last
 * seen (a reader must not trust them then); the next tries back off, from a second (an istiod
 * restart is seen again at once) doubling up to the period: an istiod that is down or refuses
 * the token is asked no more often than a healthy one, and one that is back is seen within a
 * period. (Up to 5 minutes before: a standby whose tries had backed off to 2 minutes took the
 * lead and reported istiod unreachable for 2 minutes after it answered again, sweep seed
 * 4506965.) A proxy's dump that istiod refused (a token without the rights) is asked again once a
 * period, not only at the proxy's next push.
 *
 * The replicas asked are fixed (`clients`, from `--istiod-url`) or found each round
 * (`discovery`, from the EndpointSlices of istiod's Service: istiod_endpoints.ts). Found
 * replicas: one that is listed and ready but does not answer is a failure, as a fixed one is; one
 * that is no longer listed when its answer fails (it went away during the round), or that is
 * terminating, is no failure and its proxies are read from the replicas they move to; none listed
 * ready is a failure that says so (reason `NoReadyReplica`). A change of the replicas brings a
 * round at once, also while backing off.
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
  type ProxySync,
  retryWaitMs,
  SETTLE_ROUNDS,
  type Syncz,
  verdictOf,
} from "../api/istiod.ts";
import { LOCAL_RATELIMIT_FILTER } from "../api/envoy.ts";

// How the operator asks istiod, in src/api/istiod.ts so the simulator's model of this poller reads
// the same figures.
export { DEFAULT_FOLLOW_UP_MS, DEFAULT_PERIOD_MS, SETTLE_ROUNDS };
import type { KubeObject } from "../api/object.ts";
import { type Clock, inParallel, type LocalSource, type Logger } from "../runtime/mod.ts";
import type { IstiodAnswer, IstiodClient } from "./istiod.ts";
import type { ReplicaView } from "./istiod_endpoints.ts";

/** Most dumps asked in one round; the rest wait for the next. */
export const MAX_DUMPS_PER_ROUND = 100;
/** Dumps asked at once. */
const DUMP_CONCURRENCY = 4;

/** Settings of the poller. */
export interface IstiodPollOptions {
  /** One client per istiod replica, fixed: a proxy is connected to one of them. */
  clients?: readonly IstiodClient[];
  /** Or the replicas as found now, each asked through `clientOf(url)` (one client a URL). */
  discovery?: IstiodDiscovery;
  /** Where the ProxyStatus objects go; its type must be PROXY_STATUS. */
  source: LocalSource;
  /** The operator's namespace, where istiod's own ProxyStatus is kept. */
  namespace: string;
  clock: Clock;
  log: Logger;
  /** Whether to read what a Pod's proxy holds: a RateLimit selects it. Default: none. */
  wants?: (pod: { namespace: string; name: string }) => boolean;
  /** The stat prefix of the operator's local rate limit configs. */
  statPrefix: string;
  /** Period between two rounds; default {@link DEFAULT_PERIOD_MS}. */
  periodMs?: number;
  /** Wait before a confirming round; default {@link DEFAULT_FOLLOW_UP_MS}. */
  followUpMs?: number;
  /** Most dumps asked in one round; default {@link MAX_DUMPS_PER_ROUND}. */
  maxDumpsPerRound?: number;
  /**
   * A cheap token of what may change what the proxies hold (the operator's EnvoyFilters as the
   * cache has them), looked at every `followUpMs` between rounds: when it changes, a round comes
   * at once and {@link SETTLE_ROUNDS} more follow a `followUpMs` apart, so a new limit is seen as
   * soon as istiod has pushed it, not a period later. No request is made to look at it.
   */
  changed?: () => unknown;
}

/** Where the replicas come from when they are not fixed (IstiodEndpoints gives `view`). */
export interface IstiodDiscovery {
  /** The replicas now; looked at every `followUpMs` between rounds, without a request. */
  view(): ReplicaView;
  clientOf(url: string): IstiodClient;
}

/** One replica asked in a round. */
interface Target {
  client: IstiodClient;
  /** Its URL and name when discovered. */
  url?: string;
  name?: string;
  /** Whether no answer is a failure (false: terminating). */
  required: boolean;
}

/**
 * What one round found: whether every istiod answered, whether to follow up soon, and whether
 * proxies are left to read beyond the round's bound (the next round then comes at once).
 */
export interface RoundResult {
  ok: boolean;
  followUp: boolean;
  backlog: boolean;
}

interface Kept {
  /** The push it was read at: `ackedKey` of the proxy then. */
  acked: string;
  record: HeldRecord;
  /** When the dump's answer came (the poller's clock). */
  at: number;
  /** True until a syncz answered `followUpMs` after the dump shows the same push. */
  recheck: boolean;
}

const sameLimits = (a: HeldRecord | undefined, b: HeldRecord) =>
  a !== undefined && "limits" in a && "limits" in b &&
  JSON.stringify(a.limits) === JSON.stringify(b.limits) && a.unreadable === b.unreadable;

/** Polls istiod; `round` is one round, `run` rounds until stopped. */
export class IstiodPoller {
  readonly #o: IstiodPollOptions;
  readonly #held = new Map<string, Kept>();
  /** The discovered replicas' clients, by URL (those no longer listed are dropped). */
  readonly #clients = new Map<string, IstiodClient>();
  /** The last failure said, until a round succeeds. */
  #lastFailure = "";

  /** A poller; nothing is asked before `round` or `run`. */
  constructor(opts: IstiodPollOptions) {
    if (opts.source.type !== PROXY_STATUS) throw new Error("the source must hold ProxyStatus");
    if ((opts.clients === undefined) === (opts.discovery === undefined)) {
      throw new Error("give the poller either clients or a discovery");
    }
    this.#o = opts;
  }

  /** The replicas to ask now, or what to publish instead (undefined: nothing known yet). */
  #targets(): Target[] | { reason: string; message: string } | undefined {
    const o = this.#o;
    if (o.clients) return o.clients.map((client) => ({ client, required: true }));
    const view = o.discovery!.view();
    if (view.state === "listing") return undefined;
    if (view.state === "failed") return { reason: view.reason, message: view.message };
    const urls = new Set(view.replicas.map((r) => r.url));
    for (const url of this.#clients.keys()) if (!urls.has(url)) this.#clients.delete(url);
    return view.replicas.map((r) => {
      let client = this.#clients.get(r.url);
      if (!client) this.#clients.set(r.url, client = o.discovery!.clientOf(r.url));
      return { client, url: r.url, name: r.name, required: r.required };
    });
  }

  /** Whether a discovered replica whose answer failed is still listed, ready: then it counts. */
  #stillRequired(t: Target): boolean {
    if (!t.required) return false;
    if (t.url === undefined) return true;
    const view = this.#o.discovery!.view();
    return view.state === "listed" && view.replicas.some((r) => r.url === t.url && r.required);
  }

  /**
   * Publishes istiod's status as not asked, the proxies as last seen, and logs why: a warning
   * when the reason is new, at debug while it stays the same.
   */
  #unreachable(reason: string, message: string): void {
    const o = this.#o;
    const said = `${reason} ${message}`;
    if (said !== this.#lastFailure) {
      o.log.warn("istiod could not be asked", { reason, error: message });
    } else o.log.debug("istiod still cannot be asked", { reason, error: message });
    this.#lastFailure = said;
    const kept = o.source.list().items.filter((x) =>
      x.metadata.namespace !== o.namespace || x.metadata.name !== ISTIOD_STATUS_NAME
    );
    o.source.publish([
      ...kept,
      istiodStatusObject(o.namespace, { reachable: false, reason, message }),
    ]);
  }

  /**
   * One round: every istiod asked, the answers merged (a proxy listed by two replicas while it
   * moves keeps the later send), what the wanted proxies hold read or confirmed, and published.
   */
  async round(): Promise<RoundResult> {
    const o = this.#o;
    const targets = this.#targets();
    // The replicas are not known yet: nothing to say; look again soon.
    if (targets === undefined) return { ok: true, followUp: true, backlog: false };
    if (!Array.isArray(targets)) {
      // Not istiod's failure and no request was made: the discovery says why (it retries).
      this.#unreachable(targets.reason, targets.message);
      return { ok: true, followUp: false, backlog: false };
    }
    const answers: IstiodAnswer<Syncz>[] = await Promise.all(targets.map((t) => t.client.syncz()));
    const failedAt = answers.findIndex((a, i) => !a.ok && this.#stillRequired(targets[i]));
    const failed = answers[failedAt];
    if (failed && !failed.ok) {
      // What was last seen of the proxies stays: the reader sees istiod's status first.
      const name = targets[failedAt].name;
      const message = name ? `istiod replica ${name}: ${failed.message}` : failed.message;
      this.#unreachable(failed.reason, message);
      return { ok: false, followUp: false, backlog: false };
    }
    // Every replica asked went away during the round: nothing to say; the next round (backing
    // off, but at once when the replicas change) asks those listed then.
    if (answers.every((a) => !a.ok)) return { ok: false, followUp: false, backlog: false };
    const proxies = new Map<string, { p: ProxySync; client: IstiodClient }>();
    answers.forEach((a, i) => {
      if (!a.ok) {
        o.log.debug("a replica going away did not answer", {
          replica: targets[i].name,
          error: a.message,
        });
        return;
      }
      for (const p of a.value.proxies) {
        const seen = proxies.get(p.id);
        if (!seen || seen.p.listeners.sentTime < p.listeners.sentTime) {
          proxies.set(p.id, { p, client: targets[i].client });
        }
      }
    });
    const now = o.clock.now();
    const followUpMs = o.followUpMs ?? DEFAULT_FOLLOW_UP_MS;
    const period = o.periodMs ?? DEFAULT_PERIOD_MS;
    const toRead: { p: ProxySync; client: IstiodClient }[] = [];
    for (const [id, entry] of proxies) {
      const pod = podOfProxy(id);
      const wanted = pod !== undefined && (o.wants?.(pod) ?? false);
      const kept = this.#held.get(id);
      if (!wanted) {
        this.#held.delete(id);
        continue;
      }
      if (verdictOf(entry.p).state !== "Acked") {
        // A push under way, or rejected: the proxy keeps what it acknowledged last (Envoy holds
        // its config until it ACKs or NACKs), so a reading of that push stays, and is shown; a
        // dump now would show the push under way. A reading of an older push goes.
        if (kept && kept.acked !== ackedKey(entry.p)) this.#held.delete(id);
        continue;
      }
      // A dump istiod refused or failed is asked again a period later even without a new push:
      // the token may have been given more rights, or istiod may answer now.
      const retry = kept !== undefined && "error" in kept.record && now - kept.at >= period;
      if (kept && kept.acked === ackedKey(entry.p) && !retry) {
        // The same push as the dump, seen by a syncz answered late enough: nothing was under way.
        if (kept.recheck && now - kept.at >= followUpMs) {
          kept.recheck = false;
          if ("limits" in kept.record) kept.record = { ...kept.record, confirmed: true };
        }
        continue;
      }
      toRead.push(entry);
    }
    for (const id of this.#held.keys()) if (!proxies.has(id)) this.#held.delete(id);
    // Oldest reading first (never read before all): a backlog is worked through in turn, not in
    // istiod's order, which would serve the same proxies first every round.
    const readAt = (e: { p: ProxySync }) => this.#held.get(e.p.id)?.at ?? -Infinity;
    toRead.sort((a, b) => readAt(a) - readAt(b));
    const reading = toRead.slice(0, o.maxDumpsPerRound ?? MAX_DUMPS_PER_ROUND);
    await inParallel(reading, DUMP_CONCURRENCY, async ({ p, client }) => {
      const dump = await client.listenersAndRoutes(p.id);
      let record: HeldRecord = dump.ok
        ? { ...heldLimitsOf(dump.value, LOCAL_RATELIMIT_FILTER, o.statPrefix), confirmed: false }
        : { error: dump.reason, message: dump.message };
      // The same limits as a confirmed reading of an earlier push: the proxy held them before and
      // holds them now, so the record stays confirmed (a push that changes nothing of ours must
      // not turn Accepted to Unknown and back); the next round still checks for a push under way.
      const before = this.#held.get(p.id)?.record;
      if (sameLimits(before, record) && before && "confirmed" in before && before.confirmed) {
        record = { ...record, confirmed: true } as HeldRecord;
      }
      this.#held.set(p.id, { acked: ackedKey(p), record, at: o.clock.now(), recheck: dump.ok });
    });
    const objects: KubeObject[] = [];
    for (const { p } of proxies.values()) {
      // What was read at another push than the one acknowledged now is not published.
      const kept = this.#held.get(p.id);
      const obj = proxyStatusObject(p, kept?.acked === ackedKey(p) ? kept.record : undefined);
      if (obj) objects.push(obj);
    }
    objects.push(istiodStatusObject(o.namespace, { reachable: true, proxies: proxies.size }));
    if (this.#lastFailure) o.log.info("istiod answers again", { proxies: proxies.size });
    this.#lastFailure = "";
    const changes = o.source.publish(objects);
    if (changes > 0) {
      o.log.debug("istiod's proxies changed", {
        changes,
        proxies: proxies.size,
        dumps: reading.length,
      });
    }
    const unconfirmed = [...this.#held.values()].some((k) => k.recheck);
    const backlog = toRead.length > reading.length;
    return { ok: true, followUp: unconfirmed || backlog, backlog };
  }

  /**
   * Rounds until `signal` aborts: a period apart, sooner to confirm or after `changed` moved,
   * backing off on failure (when a change does not hurry it); at once when the discovered
   * replicas change, backing off or not.
   */
  async run(signal: AbortSignal): Promise<void> {
    const o = this.#o;
    const period = o.periodMs ?? DEFAULT_PERIOD_MS;
    const followUp = o.followUpMs ?? DEFAULT_FOLLOW_UP_MS;
    const token = () => {
      try {
        return o.changed?.();
      } catch {
        return undefined;
      }
    };
    const replicas = () => {
      const v = o.discovery?.view();
      return v === undefined ? "" : v.state === "listed" ? `listed ${v.version}` : v.state;
    };
    let seen = token();
    let seenReplicas = replicas();
    let settle = 0;
    let wait = period;
    /** Rounds failed in a row: the first is retried a followUp later, each next twice as late. */
    let failures = 0;
    while (!signal.aborted) {
      const r = await this.round();
      failures = r.ok ? 0 : failures + 1;
      wait = !r.ok
        ? retryWaitMs(failures, followUp, period)
        : r.backlog
        ? 0
        : r.followUp || settle > 0
        ? followUp
        : period;
      if (settle > 0) settle--;
      try {
        // Proxies left to read: the next round at once (a confirmation needs only that a
        // followUp has passed since a reading, which the rounds in between give it).
        if (wait === 0) await o.clock.sleep(0, signal);
        // Slept in steps of followUp, looking at the token between them (not while backing off).
        for (let slept = 0; slept < wait;) {
          const looking = (o.changed && r.ok) || o.discovery;
          const step = looking ? Math.min(followUp, wait - slept) : wait - slept;
          await o.clock.sleep(step, signal);
          slept += step;
          const nowReplicas = replicas();
          if (nowReplicas !== seenReplicas) {
            // Other replicas: ask them now, and a backoff starts again from a followUp.
            seenReplicas = nowReplicas;
            failures = 0;
            break;
          }
          const now = token();
          if (r.ok && now !== seen) {
            seen = now;
            settle = SETTLE_ROUNDS;
            break;
          }
        }
      } catch {
        return;
      }
    }
  }
}
