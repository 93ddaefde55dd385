/**
 * The global limits' invariant (issue #43 point 6): in one fixed window of one global rule (and one
 * client, for a per-client rule), the mesh admits at most the rule's `requests`, counting the
 * requests the engine answered (while the engine and Redis are up: a call that failed, admitted by
 * the failure mode, is not the engine's admission). The limit is the user's, read from the
 * RateLimit's spec (the largest any of its generations gave the rule, since a window may span an
 * edit), not from the filter or the engine, which a broken operator or engine could get wrong; the
 * window is computed here from the unit and the time (aligned to the Unix epoch). Requests a
 * shadow limit let through over the limit (the engine's shadow mode, or the filter not enforcing)
 * are not admissions of an enforced limit and are not counted.
 */
import { globalDomain } from "../src/api/global_engine.ts";
import type { KubeObject } from "../src/api/object.ts";
import { GLOBAL_DEFAULT_RULE } from "../src/reconcile/ratelimit/entries.ts";
import { type MeshResponse, windowStart, type WindowUnit } from "../src/dataplane/mod.ts";

/** The invariant's name in violations and traces. */
export const GLOBAL_WINDOW = "global-window";

interface GlobalLimitSpec {
  requests: number;
  unit: string;
}

/** The spec's global rules' limits, by rule id (`0`, `1`, ..., `default`). */
function limitsOf(rl: KubeObject): [string, GlobalLimitSpec][] {
  const g = (rl.spec as { global?: unknown } | undefined)?.global as
    | { rules?: { limit?: GlobalLimitSpec }[]; default?: { limit?: GlobalLimitSpec } }
    | undefined;
  if (!g) return [];
  const out: [string, GlobalLimitSpec][] = [];
  (g.rules ?? []).forEach((r, i) => r.limit && out.push([String(i), r.limit]));
  if (g.default?.limit) out.push([GLOBAL_DEFAULT_RULE, g.default.limit]);
  return out;
}

/** The checker: feed it every RateLimit seen and every response of the mesh. */
export class GlobalWindows {
  /** The largest limit each rule had, by `domain rule unit`. */
  readonly #limits = new Map<string, number>();
  /** Admissions by `counter@window`. */
  readonly #admitted = new Map<string, number>();
  /** Windows counted (for tests and the trace). */
  get windows(): number {
    return this.#admitted.size;
  }

  /** Takes a RateLimit as it is now: its rules' limits join those of its earlier generations. */
  observe(rl: KubeObject): void {
    const domain = globalDomain(rl.metadata.namespace ?? "", rl.metadata.name);
    for (const [rule, limit] of limitsOf(rl)) {
      const k = `${domain} ${rule} ${limit.unit.toUpperCase()}`;
      const n = typeof limit.requests === "number" ? limit.requests : 0;
      if ((this.#limits.get(k) ?? -1) < n) this.#limits.set(k, n);
    }
  }

  /**
   * Counts a response given at `nowMs`; returns what is broken when its window admitted more than
   * the limit.
   */
  check(r: MeshResponse, nowMs: number): string | undefined {
    const g = r.global;
    if (!g || g.code !== "OK" || r.rejected || g.shadowOverLimit || g.notEnforced) return undefined;
    for (const key of g.keys ?? []) {
      const base = key.slice(0, key.lastIndexOf("_"));
      const prefix = `${g.domain}_rule_`;
      if (!base.startsWith(prefix)) continue;
      const rest = base.slice(prefix.length);
      const rule = rest.includes("_") ? rest.slice(0, rest.indexOf("_")) : rest;
      for (const [k, limit] of this.#limits) {
        const [domain, id, unit] = k.split(" ");
        if (domain !== g.domain || id !== rule) continue;
        const start = windowStart(Math.floor(nowMs / 1000), unit as WindowUnit);
        const w = `${base}@${unit}@${start}`;
        const n = (this.#admitted.get(w) ?? 0) + 1;
        this.#admitted.set(w, n);
        if (n > limit) {
          return `global limit: ${base} admitted ${n} requests in the ${unit} window starting ${
            new Date(start * 1000).toISOString()
          }, its limit ${limit}`;
        }
      }
    }
    return undefined;
  }
}
