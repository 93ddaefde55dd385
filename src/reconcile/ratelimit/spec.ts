/**
 * What a RateLimit's spec alone decides: whether it parses and validates, and the EnvoyFilter it
 * renders to. Nothing else of the cluster goes in, so the answer is a function of the object.
 *
 * The runtime's cache hands the reducer deep-frozen objects, and a wave of no-op reconciles (a
 * resync, a new leadership term) meets each of them again and again: for a frozen object the
 * answer is kept in a WeakMap for as long as the object lives, and is itself frozen, so the reducer
 * stays a function of its input (same object, same answer; nothing can change either). Objects that
 * are not frozen are judged afresh every time.
 */
import { formatErrors } from "../../api/issues.ts";
import type { KubeObject } from "../../api/object.ts";
import { parseRateLimit, type RateLimit } from "../../api/ratelimit.ts";
import { renderEnvoyFilter } from "./envoyfilter.ts";
import { validateSpec } from "./validate.ts";

/** A spec that cannot be applied (and why), or the parsed RateLimit and its EnvoyFilter. */
export type SpecVerdict =
  | { ok: false; problem: string }
  | { ok: true; rl: RateLimit; desired: KubeObject };

const judged = new WeakMap<object, { namespace: string; verdict: SpecVerdict }>();

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** True for an object frozen as the cache freezes them (itself, its metadata and spec). */
function isFrozenObject(raw: unknown): raw is Record<string, unknown> {
  if (raw === null || typeof raw !== "object" || !Object.isFrozen(raw)) return false;
  const { metadata, spec } = raw as { metadata?: unknown; spec?: unknown };
  return [metadata, spec].every((v) => v === null || typeof v !== "object" || Object.isFrozen(v));
}

function judge(raw: unknown, namespace: string): SpecVerdict {
  // Status is the operator's own output: judging it would make the verdict depend on itself.
  const parsed = parseRateLimit(
    raw !== null && typeof raw === "object" && !Array.isArray(raw)
      ? { ...raw, status: undefined }
      : raw,
  );
  if (!parsed.ok) return { ok: false, problem: formatErrors(parsed.errors) };
  const rl = parsed.value;
  const problems = validateSpec(rl.spec);
  if (problems.length > 0) return { ok: false, problem: problems.join("; ") };
  const desired = renderEnvoyFilter({ ...rl, metadata: { ...rl.metadata, namespace } });
  return { ok: true, rl, desired };
}

/**
 * Parses, validates and renders a RateLimit (`namespace`: where its filter goes). The answer for a
 * frozen object is frozen and shared: callers must not change it.
 */
export function judgeSpec(raw: unknown, namespace: string): SpecVerdict {
  if (!isFrozenObject(raw)) return judge(raw, namespace);
  const hit = judged.get(raw);
  if (hit && hit.namespace === namespace) return hit.verdict;
  const verdict = deepFreeze(judge(raw, namespace));
  judged.set(raw, { namespace, verdict });
  return verdict;
}
