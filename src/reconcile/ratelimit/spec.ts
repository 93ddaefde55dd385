/**
 * What a RateLimit's spec alone decides: whether it parses and validates, and the EnvoyFilter it
 * renders to. Nothing else of the cluster goes in.
 *
 * The parsed spec and the rendered filter are not remembered between reconciles: keeping them
 * (about 9 KB a RateLimit) for its life would cost about 90 MB at ten thousand RateLimits
 * (bench/RESULTS.md, issue 14), more than the operator's whole memory target. What is remembered
 * of a frozen RateLimit object is small (`Known`).
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

/**
 * The stored bytes of a filter, or a bound above them (`exact` false): a character of its JSON
 * takes at most 6 bytes stored (`<` is written `\u003c`), so a filter of at most `maxBytes / 6`
 * characters fits without counting.
 */
interface StoredSize {
  bytes: number;
  exact: boolean;
}

function storedSize(desired: KubeObject, maxBytes: number): StoredSize {
  const bound = (JSON.stringify(desired) ?? "").length * 6;
  return bound <= maxBytes
    ? { bytes: bound, exact: false }
    : { bytes: storedBytes(desired), exact: true };
}

/**
 * What judging a frozen RateLimit object found that judging it again would find: its problems
 * (none, for a valid spec), and the stored size of the filter it last rendered with the namespace
 * and contexts it was rendered for. The cache hands out the objects it keeps deep-frozen and
 * replaces them on a change, never changes them, so a steady-state reconcile is given the object
 * the last one was. About 200 bytes a RateLimit (bench/RESULTS.md), gone with its object.
 */
interface Known {
  problems: readonly string[];
  /** The namespace and contexts of the last filter rendered, and its size (flat: smaller). */
  namespace?: string;
  contexts?: readonly ProxyContext[];
  size?: StoredSize;
}

/** By frozen RateLimit object: pure in effect, since a frozen object cannot change. */
const known = new WeakMap<object, Known>();

/** Problems of a valid spec, shared by every `Known`. */
const NONE: readonly string[] = Object.freeze([]);

/** `raw` when it may key `known`: an object frozen as the cache freezes what it keeps. */
function frozen(raw: unknown): object | undefined {
  return raw !== null && typeof raw === "object" && Object.isFrozen(raw) ? raw : undefined;
}

/**
 * Parses `raw` and validates it (unless it is known to be valid): the parsed RateLimit, or its
 * problems.
 */
function parseAndValidate(
  raw: unknown,
  knownValid: boolean,
): { rl: RateLimit } | { problems: readonly string[] } {
  // Status is the operator's own output: judging it would make the verdict depend on itself.
  const parsed = parseRateLimit(
    raw !== null && typeof raw === "object" && !Array.isArray(raw)
      ? { ...raw, status: undefined }
      : raw,
  );
  if (!parsed.ok) return { problems: errorLines(parsed.errors) };
  const problems = knownValid ? NONE : validateSpec(parsed.value.spec);
  return problems.length > 0 ? { problems } : { rl: parsed.value };
}

function sameContexts(
  a: readonly ProxyContext[] | undefined,
  b: readonly ProxyContext[] | undefined,
): boolean {
  return a === b || (a !== undefined && b !== undefined && a.length === b.length &&
    a.every((c, i) => c === b[i]));
}

/**
 * Why `desired`, rendered into `namespace` for `contexts`, cannot be applied for its size (over
 * `maxBytes` as stored), or undefined. A frozen RateLimit's size is kept (`Known`).
 */
function sizeProblem(
  desired: KubeObject,
  maxBytes: number,
  memo: Known | undefined,
  namespace: string,
  contexts: readonly ProxyContext[] | undefined,
): string | undefined {
  const kept = memo && memo.namespace === namespace && sameContexts(memo.contexts, contexts)
    ? memo.size
    : undefined;
  const size = kept && (kept.exact || kept.bytes <= maxBytes)
    ? kept
    : storedSize(desired, maxBytes);
  if (memo && size !== kept) {
    memo.namespace = namespace;
    memo.contexts = contexts && [...contexts];
    memo.size = size;
  }
  return size.exact && size.bytes > maxBytes
    ? `spec: the EnvoyFilter it renders has ${size.bytes} bytes, over the limit of ${maxBytes} (etcd stores at most 1.5 MiB an object)`
    : undefined;
}

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
  const key = frozen(raw);
  let memo = key && known.get(key);
  const judged = memo && memo.problems.length > 0
    ? { problems: memo.problems }
    : parseAndValidate(raw, memo !== undefined);
  if (key && !memo) {
    const problems = "problems" in judged ? judged.problems : NONE;
    memo = { problems, namespace: undefined, contexts: undefined, size: undefined };
    known.set(key, memo);
  }
  if ("problems" in judged) return { ok: false, problems: [...judged.problems] };
  const { rl } = judged;
  const contexts = options.contexts?.(rl.spec.selectorLabels);
  const desired = renderEnvoyFilter({ ...rl, metadata: { ...rl.metadata, namespace } }, contexts);
  const maxBytes = options.maxBytes ?? ENVOYFILTER_MAX_BYTES;
  const tooLarge = sizeProblem(desired, maxBytes, memo, namespace, contexts);
  return tooLarge === undefined ? { ok: true, rl, desired } : { ok: false, problems: [tooLarge] };
}
