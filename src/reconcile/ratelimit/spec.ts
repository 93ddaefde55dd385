/**
 * What a RateLimit's spec alone decides: whether it parses and validates, and the EnvoyFilter it
 * renders to. Nothing else of the cluster goes in.
 *
 * Not remembered between reconciles: keeping each RateLimit's parsed spec and rendered filter
 * (about 9 KB) for its life would triple a steady-state wave's speed but cost about 90 MB at ten
 * thousand RateLimits (bench/RESULTS.md, issue 14), more than the operator's whole memory target.
 */
import { errorLines } from "../../api/issues.ts";
import { storedBytes } from "../../api/json.ts";
import type { KubeObject } from "../../api/object.ts";
import { parseRateLimit, type RateLimit } from "../../api/ratelimit.ts";
import type { ProxyContext } from "../../api/mesh.ts";
import { renderEnvoyFilter } from "./envoyfilter.ts";
import { validateSpec } from "./validate.ts";

/**
 * The largest EnvoyFilter the operator applies, in bytes as the API server stores it: 1 MiB, two
 * thirds of etcd's default request limit (`--max-request-bytes`, 1.5 MiB), which the whole write
 * must fit, metadata and managedFields included. The CRD's bounds keep every valid RateLimit's
 * filter below it (tests/reconcile/ratelimit_bounds_test.ts); this is the defence if they did not.
 */
export const ENVOYFILTER_MAX_BYTES = 1024 * 1024;

/** A spec that cannot be applied (and why), or the parsed RateLimit and its EnvoyFilter. */
export type SpecVerdict =
  | { ok: false; problems: string[] }
  | { ok: true; rl: RateLimit; desired: KubeObject };

/**
 * Parses, validates and renders a RateLimit (`namespace`: where its filter goes; `contexts`: the
 * patch contexts for its selector, default as `renderEnvoyFilter` chooses without Pods); a filter
 * over `maxBytes` is refused.
 */
export function judgeSpec(
  raw: unknown,
  namespace: string,
  options: {
    contexts?: (selector: Readonly<Record<string, string>>) => readonly ProxyContext[];
    maxBytes?: number;
  } = {},
): SpecVerdict {
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
  const desired = renderEnvoyFilter(
    { ...rl, metadata: { ...rl.metadata, namespace } },
    options.contexts?.(rl.spec.selectorLabels),
  );
  const maxBytes = options.maxBytes ?? ENVOYFILTER_MAX_BYTES;
  const bytes = storedBytes(desired);
  if (bytes > maxBytes) {
    return {
      ok: false,
      problems: [
        `spec: the EnvoyFilter it renders has ${bytes} bytes, over the limit of ${maxBytes} (etcd stores at most 1.5 MiB an object)`,
      ],
    };
  }
  return { ok: true, rl, desired };
}
