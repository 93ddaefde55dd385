/**
 * What a RateLimit's spec alone decides: whether it parses and validates, and the EnvoyFilter it
 * renders to. Nothing else of the cluster goes in.
 *
 * Not remembered between reconciles: keeping each RateLimit's parsed spec and rendered filter
 * (about 9 KB) for its life would triple a steady-state wave's speed but cost about 90 MB at ten
 * thousand RateLimits (bench/RESULTS.md, issue 14), more than the operator's whole memory target.
 */
import { errorLines } from "../../api/issues.ts";
import type { KubeObject } from "../../api/object.ts";
import { parseRateLimit, type RateLimit } from "../../api/ratelimit.ts";
import { renderEnvoyFilter } from "./envoyfilter.ts";
import { validateSpec } from "./validate.ts";

/** A spec that cannot be applied (and why), or the parsed RateLimit and its EnvoyFilter. */
export type SpecVerdict =
  | { ok: false; problems: string[] }
  | { ok: true; rl: RateLimit; desired: KubeObject };

/** Parses, validates and renders a RateLimit (`namespace`: where its filter goes). */
export function judgeSpec(raw: unknown, namespace: string): SpecVerdict {
  // Status is the operator's own output: judging it would make the verdict depend on itself.
  const parsed = parseRateLimit(
    raw !== null && typeof raw === "object" && !Array.isArray(raw)
      ? { ...raw, status: undefined }
      : raw,
  );
  if (!parsed.ok) return { ok: false, problems: errorLines(parsed.errors) };
  const rl = parsed.value;
  const problems = validateSpec(rl.spec);
  if (problems.length > 0) return { ok: false, problems };
  const desired = renderEnvoyFilter({ ...rl, metadata: { ...rl.metadata, namespace } });
  return { ok: true, rl, desired };
}
