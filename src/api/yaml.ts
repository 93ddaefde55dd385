/**
 * Text a user hands the CLI, read as kubectl reads it, within bounds: UTF-8 only (a bad byte is
 * named by its offset), YAML as sigs.k8s.io/yaml reads it (YAML 1.1 booleans such as `yes`, `<<`
 * merge keys, octal `0644`; a time such as `1:30` or a date stays text, as there), a duplicate key
 * refused (as kubectl's default strict field validation refuses it), aliases bounded (a "billion
 * laughs" document is refused, not expanded), nesting and size bounded, and `kind: List` read as
 * its items. Every refusal is one line naming where (`NAME:LINE: ...`). Pure: text or bytes in,
 * values or a message out.
 */
import {
  type Alias,
  type Document,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseAllDocuments,
  type Tags,
  visit,
} from "yaml";
import { DNS_LABEL, DNS_SUBDOMAIN, type NameRule } from "./names.ts";

/** The most bytes an input may have: the API server's limit on a request body (3 MiB). */
export const MAX_INPUT_BYTES = 3 * 1024 * 1024;

/** The most values (objects, lists, scalars) a document may expand to once aliases are followed. */
export const MAX_VALUES = 1_000_000;

/** How deep collections may nest. */
export const MAX_DEPTH = 100;

/** Alias expansions the YAML library allows before it stops (its own measure of expansion). */
const MAX_ALIAS_COUNT = 1000;

/** What reading gives: the value, or one line saying why not. */
export type ReadResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** `bytes` as UTF-8 text, or an error naming the first byte that is not UTF-8. */
export function decodeUtf8(bytes: Uint8Array, name: string): ReadResult<string> {
  if (bytes.length > MAX_INPUT_BYTES) return tooLarge(bytes.length, name);
  try {
    return { ok: true, value: STRICT_UTF8.decode(bytes) };
  } catch {
    // Only a refused input is scanned again, for the offset to name.
    const bad = firstInvalidUtf8(bytes) ?? 0;
    return {
      ok: false,
      error: `${name}: not UTF-8: byte ${bad} (0x${
        bytes[bad].toString(16).padStart(2, "0")
      }) does not start or continue a UTF-8 character`,
    };
  }
}

/** The platform's decoder, refusing what is not UTF-8 (a leading byte order mark is dropped). */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * How many bytes `text` takes as UTF-8 when that may be over `limit`; otherwise a number at most
 * `limit`, without counting (a UTF-16 code unit takes at most 3 bytes, so a text of at most
 * `limit / 3` units is within it).
 */
function utf8LengthPast(text: string, limit: number): number {
  if (text.length * 3 <= limit) return text.length;
  return new TextEncoder().encode(text).length;
}

/** The error for an input over MAX_INPUT_BYTES. */
export function tooLarge(bytes: number, name: string): { ok: false; error: string } {
  return {
    ok: false,
    error: `${name}: ${bytes} bytes is larger than ${MAX_INPUT_BYTES} (3 MiB, the most the ` +
      `API server takes in one request)`,
  };
}

/** The offset of the first byte of `bytes` that is not well-formed UTF-8 (RFC 3629), if any. */
export function firstInvalidUtf8(bytes: Uint8Array): number | undefined {
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    const b = bytes[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min = 0x80;
    let max = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) min = 0xa0; // no overlong forms
      if (b === 0xed) max = 0x9f; // no surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) min = 0x90;
      if (b === 0xf4) max = 0x8f; // nothing past U+10FFFF
    } else return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      const lo = k === 1 ? min : 0x80;
      const hi = k === 1 ? max : 0xbf;
      if (c === undefined || c < lo || c > hi) return i + k < n ? i + k : i;
    }
    i += need + 1;
  }
  return undefined;
}

/**
 * The tags of YAML 1.1 as sigs.k8s.io/yaml (go-yaml v2) resolves plain scalars: booleans
 * (`yes`/`no`/`on`/`off`), null, integers (`0644` octal, `0x`, `0b`, `_` separators), floats and
 * merge keys. Sexagesimal numbers (`1:30`) and timestamps stay strings, and `!!binary`, `!!set`,
 * `!!omap` and `!!pairs` are not read, since JSON, which the API server stores, has no such values.
 */
function kubectlTags(tags: Tags): Tags {
  const dropped = new Set([
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:binary",
    "tag:yaml.org,2002:set",
    "tag:yaml.org,2002:omap",
    "tag:yaml.org,2002:pairs",
  ]);
  return tags.filter((t) =>
    typeof t === "string" ||
    (!dropped.has(t.tag) && (t as { format?: string }).format !== "TIME")
  );
}

/**
 * Every document of a YAML text as plain values (empty documents left out), or the first problem
 * as one line `NAME:LINE: message`.
 */
export function parseYamlDocuments(text: string, name: string): ReadResult<unknown[]> {
  const bytes = utf8LengthPast(text, MAX_INPUT_BYTES);
  if (bytes > MAX_INPUT_BYTES) return tooLarge(bytes, name);
  const lineCounter = new LineCounter();
  const at = (offset: number | undefined) =>
    offset === undefined ? name : `${name}:${lineCounter.linePos(offset).line || 1}`;
  let docs;
  try {
    docs = parseAllDocuments(text, {
      version: "1.1",
      merge: true,
      customTags: kubectlTags,
      // Duplicates are found below in one pass; the library's own check is quadratic.
      uniqueKeys: false,
      prettyErrors: false,
      lineCounter,
    });
  } catch (err) {
    return { ok: false, error: `${name}: not YAML: ${oneLine(err)}` };
  }
  if (!Array.isArray(docs)) return { ok: true, value: [] };
  const values: unknown[] = [];
  for (const doc of docs) {
    const problem = doc.errors[0];
    if (problem) return { ok: false, error: `${at(problem.pos[0])}: ${oneLine(problem)}` };
    const shape = checkNodes(doc.contents, (alias) => alias.resolve(doc));
    if (shape) return { ok: false, error: `${at(shape.offset)}: ${shape.message}` };
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (err) {
      const unresolved = err instanceof ReferenceError && /^Unresolved alias/.test(err.message)
        ? unresolvedAlias(doc)
        : undefined;
      if (unresolved) {
        return {
          ok: false,
          error: `${at(unresolved.range?.[0])}: unresolved alias *${unresolved.source} ` +
            `(no anchor &${unresolved.source} before it)`,
        };
      }
      const message = err instanceof ReferenceError && /alias count/i.test(String(err.message))
        ? `its aliases expand too far (more than ${MAX_ALIAS_COUNT} expansions): refused as ` +
          `a resource exhaustion attack`
        : oneLine(err);
      return { ok: false, error: `${at(doc.range[0])}: ${message}` };
    }
    const size = countValues(value, MAX_VALUES);
    if (size > MAX_VALUES) {
      return {
        ok: false,
        error: `${at(doc.range[0])}: expands to more than ${MAX_VALUES} values once its ` +
          `aliases are followed: refused as a resource exhaustion attack`,
      };
    }
    if (value !== null && value !== undefined) values.push(value);
  }
  return { ok: true, value: flattenLists(values) };
}

/** The first alias of `doc` whose anchor does not come before it; undefined when none. */
function unresolvedAlias(doc: Document): Alias | undefined {
  let found: Alias | undefined;
  visit(doc, {
    Alias(_, node) {
      if (node.resolve(doc) !== undefined) return;
      found = node;
      return visit.BREAK;
    },
  });
  return found;
}

/** The one document of a YAML text (an empty text is `null`), or why not. */
export function parseYamlDocument(text: string, name: string): ReadResult<unknown> {
  const docs = parseYamlDocuments(text, name);
  if (!docs.ok) return docs;
  if (docs.value.length > 1) {
    return { ok: false, error: `${name}: expected one YAML document, found ${docs.value.length}` };
  }
  return { ok: true, value: docs.value[0] ?? null };
}

/** A problem found in the document's nodes, at a source offset. */
interface NodeProblem {
  offset?: number;
  message: string;
}

/** A node as the walk sees it: anything with an optional source range. */
interface SourceNode {
  range?: [number, number, number] | null;
}

/**
 * Duplicate keys, keys that are not scalars, and nesting past MAX_DEPTH, found in one pass over
 * the document's nodes (aliases are not followed: what they refer to is checked where it stands;
 * an alias used as a key is `resolve`d, as its value is the key).
 */
function checkNodes(
  root: unknown,
  resolve: (alias: Alias) => unknown,
): NodeProblem | undefined {
  const stack: Array<[unknown, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (isMap(node) || isSeq(node)) {
      if (depth >= MAX_DEPTH) {
        return {
          offset: (node as SourceNode).range?.[0],
          message: `nested more than ${MAX_DEPTH} levels deep`,
        };
      }
    }
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const key = isAlias(pair.key) ? resolve(pair.key) : pair.key;
        if (isScalar(key)) {
          if (typeof key.value === "symbol") {
            // A merge key (`<<`): it may repeat, and what it merges is checked where it stands.
            stack.push([pair.value, depth + 1]);
            continue;
          }
          const text = key.value === null ? "null" : String(key.value);
          if (seen.has(text)) {
            const offset = (pair.key as SourceNode).range?.[0];
            return { offset, message: `duplicate key ${JSON.stringify(text)}` };
          }
          seen.add(text);
        } else if (key !== null && key !== undefined) {
          return {
            offset: (pair.key as SourceNode).range?.[0],
            message: "a key must be a string, a number or a boolean, not a list or a map",
          };
        }
        stack.push([pair.value, depth + 1]);
      }
    } else if (isSeq(node)) {
      for (const item of node.items) stack.push([item, depth + 1]);
    }
  }
  return undefined;
}

/**
 * How many values `value` holds, following shared references (which aliases make) as many times
 * as they occur; stops counting past `limit`.
 */
export function countValues(value: unknown, limit: number): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && count <= limit) {
    const v = stack.pop();
    count++;
    if (Array.isArray(v)) { for (const item of v) stack.push(item); }
    else if (v !== null && typeof v === "object") {
      for (const key in v) stack.push((v as Record<string, unknown>)[key]);
    }
  }
  return count;
}

/**
 * Documents with `kind: List` (or any `...List` kind with an `items` list), read as kubectl reads
 * them: their items in their place, nested lists too.
 */
export function flattenLists(values: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  const pending = [...values].reverse();
  while (pending.length > 0) {
    const v = pending.pop();
    if (isList(v)) { for (let i = v.items.length - 1; i >= 0; i--) pending.push(v.items[i]); }
    else out.push(v);
  }
  return out;
}

function isList(v: unknown): v is { kind: string; items: unknown[] } {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  const o = v as { kind?: unknown; apiVersion?: unknown; items?: unknown };
  return typeof o.kind === "string" && o.kind.endsWith("List") &&
    typeof o.apiVersion === "string" && Array.isArray(o.items);
}

function oneLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  // The parser recurses into nested collections: one nested thousands deep overflows its stack
  // before the walk below could count the levels.
  if (message.startsWith("Maximum call stack size exceeded")) {
    return `nested more than ${MAX_DEPTH} levels deep`;
  }
  return message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "").trim();
}

/** `path: Invalid value: "x": why`, for a string `value` that `rule` refuses. */
function nameProblem(path: string, value: unknown, rule: NameRule): string[] {
  if (typeof value !== "string" || value === "") return [];
  const why = value.length > rule.max
    ? `must be no more than ${rule.max} characters (it has ${value.length})`
    : rule.pattern.test(value)
    ? undefined
    : rule.rule;
  return why ? [`${path}: Invalid value: ${JSON.stringify(value)}: ${why}`] : [];
}

/**
 * Problems with an object's `metadata.name` and `metadata.namespace`, as the API server finds
 * them (each `metadata.name: Invalid value: "x": ...`); names that are absent or not strings are
 * left to the object's schema.
 */
export function objectMetaProblems(object: unknown): string[] {
  if (object === null || typeof object !== "object") return [];
  const meta = (object as { metadata?: unknown }).metadata;
  if (meta === null || typeof meta !== "object") return [];
  const { name, namespace } = meta as { name?: unknown; namespace?: unknown };
  return [
    ...nameProblem("metadata.name", name, DNS_SUBDOMAIN),
    ...nameProblem("metadata.namespace", namespace, DNS_LABEL),
  ];
}
