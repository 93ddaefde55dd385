/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it: the
 * holder renews `renewTime` every `retryPeriodMs`; a candidate takes the lease once it has seen
 * no change to it for `leaseDurationMs` on its own clock (or the holder released it); every write
 * carries the resourceVersion it read, so two candidates cannot both win. A leader that cannot
 * renew within `renewDeadlineMs` (shorter than the lease) aborts its signal at once, before any
 * standby can take over; the runner checks that signal before every write. Both sides err towards
 * safety when answers are slow: the leader counts its deadline from when it sent the renewal, a
 * standby counts the lease from when its read of a new version answered.
 */
import { RESOURCES } from "../api/resources.ts";
import { type Clock, monotonicOf, type Random, TIMER_CANCELLED } from "./clock.ts";
import { type Cluster, errorMessage, isApiError } from "./cluster.ts";
import type { KubeObject } from "../api/object.ts";
import { type LeaseSpec, leaseWith, microTime, newLease } from "./lease.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";

/** Options of a LeaderElector. */
export interface LeaderElectorOptions {
  cluster: Cluster;
  clock: Clock;
  random: Random;
  log: Logger;
  metrics?: Metrics;
  /** The holder identity (pod name). */
  identity: string;
  namespace: string;
  name: string;
  /** Default 10 000. */
  leaseDurationMs?: number;
  /** Default 7 000; must be shorter than leaseDurationMs. */
  renewDeadlineMs?: number;
  /** Default 2 000. */
  retryPeriodMs?: number;
  /**
   * Called when this replica becomes leader; `signal` aborts the moment it stops being leader.
   * `takeover` is true when the Lease named another holder (or none: released) before: someone
   * else may have led, and written, until just now. `read` is the number of the read (see
   * `reads`) whose answer the term was taken on: every write of an earlier holder came before it.
   */
  onStartedLeading?: (signal: AbortSignal, term: TermStart) => void;
  /** Called after the signal aborted (lost, released). */
  onStoppedLeading?: (reason: string) => void;
}

/** How a term began (see `onStartedLeading`). */
export interface TermStart {
  takeover: boolean;
  read: number;
}

type Attempt = "created" | "acquired" | "renewed" | "held" | "conflict" | "error";

/** One replica's side of the election. */
export class LeaderElector {
  readonly #o: LeaderElectorOptions;
  #term: AbortController | undefined;
  #deadline: AbortController | undefined;
  /** When the term ends unless a renewal succeeds first (this replica's monotonic clock). */
  #termEndsAt = 0;
  #read!: () => void;
  /** Settles once the first read of the Lease has been answered or has failed (or `run` stopped). */
  readonly firstRead: Promise<void> = new Promise((resolve) => this.#read = resolve);
  #reads = 0;
  /** The last attempt took the Lease, and `run` stopped before a term began on it. */
  #takenAtStop = false;
  /** The Lease version last seen, and when it was first seen (monotonic clock). */
  #observed: { rv?: string; at: number } | undefined;
  #lastAttemptOk = false;
  #lastFailure = "";

  constructor(opts: LeaderElectorOptions) {
    const lease = opts.leaseDurationMs ?? 10_000;
    const renew = opts.renewDeadlineMs ?? 7_000;
    if (renew >= lease) {
      throw new Error(`renewDeadlineMs (${renew}) must be shorter than leaseDurationMs (${lease})`);
    }
    this.#o = opts;
  }

  /** How many reads of the Lease have been answered so far; the first is number 1. */
  get reads(): number {
    return this.#reads;
  }

  /** True while this replica holds the lease. */
  get leading(): boolean {
    return this.#term !== undefined;
  }

  /** True when the last look at the lease worked (standing by correctly, or leading). */
  get healthy(): boolean {
    return this.leading || this.#lastAttemptOk;
  }

  /**
   * Milliseconds left of the current term if no renewal succeeds (0 when not leading). Each write
   * of the term carries it as its server-side timeout: the term ends, at the latest, a margin of
   * leaseDuration - renewDeadline before any standby may take the lease, so no write of this term
   * can land in the next one, however slow the server is.
   */
  get termLeftMs(): number {
    return this.leading ? Math.max(0, this.#termEndsAt - this.#mono()) : 0;
  }

  /** The signal of the current term (aborted when not leading). */
  get signal(): AbortSignal {
    return this.#term?.signal ?? AbortSignal.abort();
  }

  /** Now on the monotonic clock: every duration of the election is measured on it. */
  #mono(): number {
    return monotonicOf(this.#o.clock);
  }

  get #leaseMs(): number {
    return this.#o.leaseDurationMs ?? 10_000;
  }

  get #renewDeadlineMs(): number {
    return this.#o.renewDeadlineMs ?? 7_000;
  }

  /** How long between two looks at the Lease. */
  get retryPeriodMs(): number {
    return this.#o.retryPeriodMs ?? 2_000;
  }

  /** Campaigns and renews until `stop` aborts. It does not release: call `release()` after. */
  async run(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      const sentAt = this.#mono();
      const result = await this.#tryAcquireOrRenew();
      if (stop.aborted) {
        // Taken as the stop came, with no term begun: `release()` must still give it back.
        this.#takenAtStop = result === "created" || result === "acquired";
        break;
      }
      if (result === "created" || result === "acquired" || result === "renewed") {
        // The deadline runs from when the renewal was sent, not from its answer: a standby times
        // the lease from when it saw the write, which is no earlier than the send. An answer that
        // comes late (a paused process, a clock step) counts for only what is left.
        const left = sentAt + this.#renewDeadlineMs - this.#mono();
        if (left > 0) {
          this.#termEndsAt = sentAt + this.#renewDeadlineMs;
          if (!this.leading) {
            // Attempts run one at a time: the last read answered is the one this attempt acted on.
            this.#startTerm({ takeover: result === "acquired", read: this.#reads });
          }
          this.#armDeadline(left);
        } else this.#endTerm(`the lease renewal was answered after ${this.#renewDeadlineMs} ms`);
      } else if (result === "held" && this.leading) {
        this.#endTerm("another replica holds the lease");
      }
      try {
        await this.#o.clock.sleep(this.#nextDelay(), stop);
      } catch {
        break;
      }
    }
    this.#read();
  }

  // A standby wakes up right when the lease it watches would expire, so the takeover comes within
  // leaseDuration + one retry period of the leader's last renewal.
  #nextDelay(): number {
    if (this.leading) return this.retryPeriodMs;
    const jittered = this.retryPeriodMs * (1 + 0.2 * this.#o.random.next());
    if (!this.#observed) return jittered;
    const expiresIn = this.#observed.at + this.#leaseMs - this.#mono();
    return expiresIn > 0 ? Math.min(jittered, expiresIn + 1) : jittered;
  }

  /** Gives the lease up (graceful stop): stops writing first, then lets a standby take over at once. */
  async release(): Promise<void> {
    if (!this.leading && !this.#takenAtStop) return;
    this.#takenAtStop = false;
    this.#endTerm("released");
    const { cluster, clock, namespace, name, identity } = this.#o;
    try {
      const lease = await cluster.get(RESOURCES.Lease, namespace, name);
      const spec = (lease?.spec ?? {}) as LeaseSpec;
      if (!lease || spec.holderIdentity !== identity) return;
      const now = microTime(clock.now());
      const released: LeaseSpec = {
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: spec.leaseTransitions ?? 0,
      };
      await cluster.update(RESOURCES.Lease, leaseWith(lease, released));
      this.#o.log.info("released the leader lease", { lease: `${namespace}/${name}` });
    } catch (err) {
      this.#o.log.warn("could not release the leader lease; it expires on its own", {
        error: errorMessage(err),
      });
    }
  }

  /** Ends the term locally without touching the lease (a crash): writes stop, the lease expires. */
  abandon(reason = "abandoned"): void {
    this.#endTerm(reason);
  }

  #startTerm(term: TermStart): void {
    this.#term = new AbortController();
    this.#o.metrics?.leader.set({}, 1);
    this.#o.log.info("became leader", {
      lease: `${this.#o.namespace}/${this.#o.name}`,
      identity: this.#o.identity,
      takeover: term.takeover,
    });
    this.#o.onStartedLeading?.(this.#term.signal, term);
  }

  #endTerm(reason: string): void {
    const term = this.#term;
    if (!term) return;
    this.#term = undefined;
    this.#deadline?.abort(TIMER_CANCELLED);
    this.#deadline = undefined;
    term.abort(new Error(reason));
    this.#o.metrics?.leader.set({}, 0);
    const level = reason === "released" ? "info" : "warn";
    this.#o.log[level]("stopped leading; no more writes from this replica", { reason });
    this.#o.onStoppedLeading?.(reason);
  }

  /** (Re)starts the renew deadline: if no renewal succeeds within `ms`, leadership ends at once. */
  #armDeadline(ms: number): void {
    this.#deadline?.abort(TIMER_CANCELLED);
    const deadline = new AbortController();
    this.#deadline = deadline;
    const limit = this.#renewDeadlineMs;
    this.#o.clock.sleep(ms, deadline.signal).then(
      () => this.#endTerm(`could not renew the lease within ${limit} ms`),
      () => {},
    );
  }

  async #tryAcquireOrRenew(): Promise<Attempt> {
    const { cluster, clock, namespace, name, identity } = this.#o;
    let lease: KubeObject | undefined;
    try {
      lease = await cluster.get(RESOURCES.Lease, namespace, name);
    } catch (err) {
      this.#read();
      return this.#failed("read", err);
    }
    this.#reads++;
    this.#read();
    // When the answer came, not when it was asked: a version first seen now may be seconds old
    // if the read was slow, and its expiry must not be counted from before it was seen. Durations
    // on the monotonic clock (`seenAt`), the Lease's times on the wall clock (`now`).
    const now = clock.now();
    const seenAt = this.#mono();
    const durationSeconds = Math.ceil(this.#leaseMs / 1000);
    try {
      if (!lease) {
        const spec: LeaseSpec = {
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        };
        const created = await cluster.create(RESOURCES.Lease, newLease(namespace, name, spec));
        return this.#succeeded(created, "created");
      }
      const spec = (lease.spec ?? {}) as LeaseSpec;
      // Expiry is judged on this replica's clock from when it first saw this version of the lease.
      const prev = this.#observed;
      const seen = prev && prev.rv === lease.metadata.resourceVersion
        ? prev
        : { rv: lease.metadata.resourceVersion, at: seenAt };
      this.#observed = seen;
      const observedAt = seen.at;
      const holder = spec.holderIdentity;
      const validMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      if (holder && holder !== identity && observedAt + validMs > seenAt) {
        this.#lastAttemptOk = true;
        return "held";
      }
      const mine = holder === identity;
      const next: LeaseSpec = {
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: mine && spec.acquireTime ? spec.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
      };
      const updated = await cluster.update(RESOURCES.Lease, leaseWith(lease, next));
      return this.#succeeded(updated, mine ? "renewed" : "acquired");
    } catch (err) {
      // The lease changed between our read and write: the next attempt reads it again (a leader
      // keeps its term until then, or until its renew deadline).
      if (isApiError(err, 409)) {
        this.#lastAttemptOk = true;
        return "conflict";
      }
      return this.#failed("write", err);
    }
  }

  #succeeded(lease: KubeObject, result: Attempt): Attempt {
    this.#observed = { rv: lease.metadata.resourceVersion, at: this.#mono() };
    this.#lastAttemptOk = true;
    this.#lastFailure = "";
    return result;
  }

  /** Logs a failure once (repeats go to debug) and reports it. */
  #failed(verb: string, err: unknown): Attempt {
    this.#lastAttemptOk = false;
    const msg = `could not ${verb} the leader lease ${this.#o.namespace}/${this.#o.name}: ${
      errorMessage(err)
    }; retrying`;
    if (msg !== this.#lastFailure) this.#o.log.warn(msg);
    else this.#o.log.debug(msg);
    this.#lastFailure = msg;
    return "error";
  }
}
