/**
 * Who may read an HTTP path of the operator (its /metrics), decided by the API server as
 * controller-runtime's secure metrics decide it (pkg/metrics/filters,
 * WithAuthenticationAndAuthorization): the request's bearer token is authenticated with a
 * TokenReview, then its user is authorized with a SubjectAccessReview for the request's verb (the
 * method in lower case) on the path as a non-resource URL. No token, or one the API server does not
 * authenticate: 401; authenticated but not allowed: 403; the API server gave no decision: 500.
 * Answers are cached for as long as there: a token's review 1 minute, an allow 5 minutes, a deny 30
 * seconds.
 *
 * Unlike there, a flood of bearer tokens cannot make the operator flood the API server: tokens it
 * has not seen are reviewed at most 20 at once and 5 a second (a token bucket), the rest answered
 * 429 with Retry-After; one review serves every request waiting on the same token; and a token the
 * API server authenticated is kept apart from rejected ones, so forged tokens neither push it out
 * nor keep it waiting for a review when its minute is up. Each cache drops the entry least
 * recently used: as new tokens are reviewed at most 5 a second, other valid tokens (every Pod's
 * ServiceAccount token is one) cannot push out a scraper's that is used at least every 200
 * seconds (1,024 entries at 5 a second), however many there are.
 */
import { apiVersionOf, RESOURCES } from "../api/resources.ts";
import type { Clock } from "./clock.ts";
import type { Cluster } from "./cluster.ts";

/** The outcome for one request: its HTTP status and the body's one line. */
export interface AccessDecision {
  status: 200 | 401 | 403 | 429 | 500;
  message: string;
  /** With 429: seconds until a review of a new token can be had (the Retry-After header). */
  retryAfterSeconds?: number;
}

/** An authenticated user, as a TokenReview gives it. */
interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** How long answers are kept, in ms, and how many of each. */
export interface AccessReviewOptions {
  tokenTtlMs?: number;
  allowTtlMs?: number;
  denyTtlMs?: number;
  /** Entries of each cache; the least recently used goes first. Default 1024. */
  maxEntries?: number;
  /** Reviews of tokens not seen before that may be made at once. Default 20. */
  newTokenBurst?: number;
  /** Reviews of tokens not seen before a second, refilling that burst. Default 5. */
  newTokensPerSecond?: number;
}

/**
 * Reviews of new tokens, as tokens of a bucket: `burst` at most, refilled continuously at
 * `perSecond`. `take` spends one, or says how many ms until there is one.
 */
class ReviewBudget {
  #tokens: number;
  #at: number;
  constructor(readonly burst: number, readonly perSecond: number, now: number) {
    this.#tokens = burst;
    this.#at = now;
  }

  /** 0 when a review was taken; else the ms until one can be. */
  take(now: number): number {
    if (now > this.#at) {
      this.#tokens = Math.min(
        this.burst,
        this.#tokens + ((now - this.#at) * this.perSecond) / 1000,
      );
      this.#at = now;
    }
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.#tokens) * 1000) / this.perSecond);
  }
}

/**
 * A cache whose entries expire, holding at most `max` (a flood of tokens cannot grow it); when full,
 * the entry least recently set or read goes first.
 */
class ExpiringCache<T> {
  readonly #entries = new Map<string, { value: T; until: number }>();
  constructor(readonly max: number) {}

  /** The value of `key` if it is still good at `now`, which makes it the most recently used. */
  get(key: string, now: number): T | undefined {
    const entry = this.#entries.get(key);
    this.#entries.delete(key);
    if (!entry || entry.until <= now) return undefined;
    this.#entries.set(key, entry);
    return entry.value;
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  set(key: string, value: T, until: number): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.max) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    this.#entries.set(key, { value, until });
  }
}

/** No review to be had for a new token now: `waitMs` until one can be. */
class TooMany {
  constructor(readonly waitMs: number) {}
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Decides requests with TokenReviews and SubjectAccessReviews sent through `cluster`. */
export class AccessReview {
  /** Tokens the API server authenticated; kept past their minute, to be known as seen. */
  readonly #authenticated: ExpiringCache<{ user: UserInfo; until: number }>;
  /** Tokens it did not authenticate, for their minute. */
  readonly #rejected: ExpiringCache<true>;
  /** Reviews under way, by token digest: one serves every request waiting on it. */
  readonly #pending = new Map<string, Promise<UserInfo | null>>();
  readonly #budget: ReviewBudget;
  readonly #decisions: ExpiringCache<AccessDecision>;
  readonly #tokenTtlMs: number;
  readonly #allowTtlMs: number;
  readonly #denyTtlMs: number;
  readonly #cluster: Pick<Cluster, "create">;
  readonly #clock: Clock;

  /** Reviews through `cluster` (which needs create on tokenreviews and subjectaccessreviews). */
  constructor(cluster: Pick<Cluster, "create">, clock: Clock, opts: AccessReviewOptions = {}) {
    this.#cluster = cluster;
    this.#clock = clock;
    this.#authenticated = new ExpiringCache(opts.maxEntries ?? 1024);
    this.#rejected = new ExpiringCache(opts.maxEntries ?? 1024);
    this.#budget = new ReviewBudget(
      opts.newTokenBurst ?? 20,
      opts.newTokensPerSecond ?? 5,
      clock.now(),
    );
    this.#decisions = new ExpiringCache(opts.maxEntries ?? 1024);
    this.#tokenTtlMs = opts.tokenTtlMs ?? 60_000;
    this.#allowTtlMs = opts.allowTtlMs ?? 300_000;
    this.#denyTtlMs = opts.denyTtlMs ?? 30_000;
  }

  /** The decision for a request with this Authorization header, method and path. */
  async decide(
    authorization: string | null,
    method: string,
    path: string,
  ): Promise<AccessDecision> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
    if (!token) return { status: 401, message: "Unauthorized: a bearer token is required" };
    let user: UserInfo | null | TooMany;
    try {
      user = await this.#authenticate(token);
    } catch (err) {
      return { status: 500, message: `Authentication failed: ${(err as Error).message}` };
    }
    if (user instanceof TooMany) {
      const b = this.#budget;
      return {
        status: 429,
        message:
          `Too many new bearer tokens: at most ${b.burst} at once and ${b.perSecond} a second are reviewed`,
        retryAfterSeconds: Math.max(1, Math.ceil(user.waitMs / 1000)),
      };
    }
    if (!user) return { status: 401, message: "Unauthorized" };
    const verb = method.toLowerCase();
    const key = JSON.stringify([user, verb, path]);
    const cached = this.#decisions.get(key, this.#clock.now());
    if (cached) return cached;
    let decision: AccessDecision;
    try {
      decision = await this.#authorize(user, verb, path);
    } catch (err) {
      const message = `Authorization for user ${user.username} failed: ${(err as Error).message}`;
      return { status: 500, message };
    }
    const ttl = decision.status === 200 ? this.#allowTtlMs : this.#denyTtlMs;
    this.#decisions.set(key, decision, this.#clock.now() + ttl);
    return decision;
  }

  async #authenticate(token: string): Promise<UserInfo | null | TooMany> {
    const key = await sha256(token);
    const now = this.#clock.now();
    // Kept past its minute, so that a token once authenticated is known as seen.
    const known = this.#authenticated.get(key, Number.NEGATIVE_INFINITY);
    if (known && known.until > now) return known.user;
    if (!known && this.#rejected.get(key, now)) return null;
    const pending = this.#pending.get(key);
    if (pending) return await pending;
    if (!known) {
      const waitMs = this.#budget.take(now);
      if (waitMs > 0) return new TooMany(waitMs);
    }
    const review = this.#review(key, token);
    this.#pending.set(key, review);
    try {
      return await review;
    } finally {
      this.#pending.delete(key);
    }
  }

  async #review(key: string, token: string): Promise<UserInfo | null> {
    const review = await this.#cluster.create(RESOURCES.TokenReview, {
      apiVersion: apiVersionOf(RESOURCES.TokenReview),
      kind: RESOURCES.TokenReview.kind,
      metadata: { name: "" },
      spec: { token },
    });
    const status = review.status as { authenticated?: boolean; user?: UserInfo } | undefined;
    const user = status?.authenticated === true && status.user?.username ? status.user : null;
    const until = this.#clock.now() + this.#tokenTtlMs;
    if (user) this.#authenticated.set(key, { user, until }, Number.POSITIVE_INFINITY);
    else {
      this.#authenticated.delete(key);
      this.#rejected.set(key, true, until);
    }
    return user;
  }

  async #authorize(user: UserInfo, verb: string, path: string): Promise<AccessDecision> {
    const review = await this.#cluster.create(RESOURCES.SubjectAccessReview, {
      apiVersion: apiVersionOf(RESOURCES.SubjectAccessReview),
      kind: RESOURCES.SubjectAccessReview.kind,
      metadata: { name: "" },
      spec: {
        user: user.username,
        ...(user.uid ? { uid: user.uid } : {}),
        ...(user.groups ? { groups: user.groups } : {}),
        ...(user.extra ? { extra: user.extra } : {}),
        nonResourceAttributes: { path, verb },
      },
    });
    if ((review.status as { allowed?: boolean } | undefined)?.allowed === true) {
      return { status: 200, message: "ok" };
    }
    return { status: 403, message: `Authorization denied for user ${user.username}` };
  }
}
