/**
 * Who may read an HTTP path of the operator (its /metrics), decided by the API server as
 * controller-runtime's secure metrics decide it (pkg/metrics/filters,
 * WithAuthenticationAndAuthorization): the request's bearer token is authenticated with a
 * TokenReview, then its user is authorized with a SubjectAccessReview for the request's verb (the
 * method in lower case) on the path as a non-resource URL. No token, or one the API server does not
 * authenticate: 401; authenticated but not allowed: 403; the API server gave no decision: 500.
 * Answers are cached for as long as there: a token's review 1 minute, an allow 5 minutes, a deny 30
 * seconds.
 */
import { apiVersionOf, RESOURCES } from "../api/resources.ts";
import type { Clock } from "./clock.ts";
import type { Cluster } from "./cluster.ts";

/** The outcome for one request: its HTTP status and the body's one line. */
export interface AccessDecision {
  status: 200 | 401 | 403 | 500;
  message: string;
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
  /** Entries of each cache; the oldest goes first. Default 1024. */
  maxEntries?: number;
}

/** A cache whose entries expire, holding at most `max` (a flood of tokens cannot grow it). */
class ExpiringCache<T> {
  readonly #entries = new Map<string, { value: T; until: number }>();
  constructor(readonly max: number) {}

  get(key: string, now: number): T | undefined {
    const entry = this.#entries.get(key);
    if (entry && entry.until > now) return entry.value;
    this.#entries.delete(key);
    return undefined;
  }

  set(key: string, value: T, until: number): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.max) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    this.#entries.set(key, { value, until });
  }
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Decides requests with TokenReviews and SubjectAccessReviews sent through `cluster`. */
export class AccessReview {
  readonly #tokens: ExpiringCache<UserInfo | null>;
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
    this.#tokens = new ExpiringCache(opts.maxEntries ?? 1024);
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
    let user: UserInfo | null;
    try {
      user = await this.#authenticate(token);
    } catch (err) {
      return { status: 500, message: `Authentication failed: ${(err as Error).message}` };
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

  async #authenticate(token: string): Promise<UserInfo | null> {
    const key = await sha256(token);
    const cached = this.#tokens.get(key, this.#clock.now());
    if (cached !== undefined) return cached;
    const review = await this.#cluster.create(RESOURCES.TokenReview, {
      apiVersion: apiVersionOf(RESOURCES.TokenReview),
      kind: RESOURCES.TokenReview.kind,
      metadata: { name: "" },
      spec: { token },
    });
    const status = review.status as { authenticated?: boolean; user?: UserInfo } | undefined;
    const user = status?.authenticated === true && status.user?.username ? status.user : null;
    this.#tokens.set(key, user, this.#clock.now() + this.#tokenTtlMs);
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
