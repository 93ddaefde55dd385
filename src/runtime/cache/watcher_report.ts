/**
 * What a Watcher tells the log and the metrics: a failure clearly once (its repeats at debug), a
 * recovery once, a type that is not served once, and every restart of its watch by reason.
 */
import type { Backoff } from "../clock.ts";
import { type ResourceType, typeName } from "../../api/object.ts";
import { ApiError, describeFailure } from "../cluster.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";

/** What a report needs of its watcher's options (a WatcherOptions has them). */
export interface ReportOptions {
  type: ResourceType;
  labelSelector?: string;
  log: Logger;
  metrics?: Metrics;
  quiet?: () => boolean;
}

/** One Watcher's log and metrics. */
export class WatcherReport {
  /** The watcher's logger (its resource and selector as fields). */
  readonly log: Logger;
  readonly #o: ReportOptions;
  readonly #backoff: Backoff;
  #missing = false;
  #lastProblem = "";

  constructor(opts: ReportOptions, backoff: Backoff) {
    this.#o = opts;
    this.#backoff = backoff;
    this.log = opts.log.child({
      resource: typeName(opts.type),
      ...(opts.labelSelector ? { selector: opts.labelSelector } : {}),
    });
  }

  /** True while the type is known not to be served (an optional watch whose CRD is missing). */
  get missing(): boolean {
    return this.#missing;
  }

  /** The type is not served (its CRD is missing): said once until it is served again. */
  notServed(): void {
    if (!this.#missing) {
      this.log.info(
        `${
          typeName(this.#o.type)
        } is not served (CRD not installed yet); treating it as empty and checking again with backoff`,
      );
    }
    this.#missing = true;
  }

  /** A list or watch succeeded: says so if the type was missing or something had failed. */
  recovered(): void {
    if (this.#missing) this.log.info(`${typeName(this.#o.type)} is served now`);
    if (this.#lastProblem) this.log.info("list/watch recovered");
    this.#missing = false;
    this.#lastProblem = "";
  }

  /** Counts a restart of the watch. */
  restart(reason: string): void {
    this.#o.metrics?.watchRestarts.inc({ resource: typeName(this.#o.type), reason });
  }

  /**
   * Logs a failure clearly once; repeats of the same failure go to debug. While `quiet`, the
   * start-up checks will say what is wrong: the failure goes to debug and is not remembered, so
   * one that lasts beyond them is logged clearly after.
   */
  problem(verb: string, err: unknown): void {
    const msg = describeFailure(verb, this.#o.type, err);
    const fields = {
      code: err instanceof ApiError ? err.code : undefined,
      attempt: this.#backoff.attempts,
    };
    if (this.#o.quiet?.()) return this.log.debug(msg, fields);
    if (msg === this.#lastProblem) this.log.debug(msg, fields);
    else this.log.error(msg, fields);
    this.#lastProblem = msg;
  }
}
