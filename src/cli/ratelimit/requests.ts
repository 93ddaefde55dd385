/** Reads the `--requests` file: one JSON object a line, `count` expanded, times in order. */
import { z } from "zod";
import { goDurationProblem, parseGoDuration } from "../../api/duration.ts";
import { formatErrors, formatPath, toFieldErrors } from "../../api/issues.ts";
import { isObject } from "../../api/json.ts";
import { unknownKeyErrors } from "../../api/validation/unknown.ts";
import { headerNamesProblem, MAX_REQUESTS, METHOD, type TrafficRequest } from "./args.ts";

const LineSchema = z.strictObject({
  t: z.string().refine((s) => parseGoDuration(s) !== undefined, {
    error: (iss) =>
      goDurationProblem(
        String(iss.input),
        `${JSON.stringify(iss.input)} is not a duration like 1.5s`,
      ),
  }),
  method: z.string().regex(METHOD, {
    error: (iss) => `${JSON.stringify(iss.input)} is not an HTTP method like GET or POST`,
  }).optional(),
  path: z.string().regex(/^\//, {
    error: (iss) => `${JSON.stringify(iss.input)} does not start with /`,
  }),
  headers: z.record(z.string(), z.string()).optional(),
  client: z.string().min(1).max(256).optional(),
  count: z.int().min(1).optional(),
});

const LINE_KEYS: ReadonlySet<string> = new Set(Object.keys(LineSchema.shape));

/** An object or array open in the JSON text scanned, and where its current member is. */
interface Open {
  /** The keys seen so far (an object), or undefined (an array). */
  keys?: Set<string>;
  /** The current member: its key (an object) or index (an array). */
  at: string | number;
  parent?: Open;
}

/**
 * The first key an object of `text` (valid JSON) repeats, as `path: duplicate key "k"`: JSON.parse
 * keeps the last value of a repeated key, so without this a line would lose the first silently.
 */
export function duplicateKey(text: string): string | undefined {
  let open: Open | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      let next = end + 1;
      while (/^[ \t\n\r]$/.test(text[next] ?? "")) next++;
      // A string that a colon follows is a key of the object it is in.
      if (open?.keys !== undefined && text[next] === ":") {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (open.keys.has(key)) {
          const path: (string | number)[] = [];
          for (let o = open.parent; o !== undefined; o = o.parent) path.unshift(o.at);
          return `${path.length > 0 ? `${formatPath(path)}: ` : ""}duplicate key ${
            JSON.stringify(key)
          }`;
        }
        open.keys.add(key);
        open.at = key;
      }
      i = end;
    } else if (c === "{") open = { keys: new Set(), at: "", parent: open };
    else if (c === "[") open = { at: 0, parent: open };
    else if (c === "}" || c === "]") open = open?.parent;
    else if (c === "," && open !== undefined && open.keys === undefined) {
      open.at = (open.at as number) + 1;
    }
  }
  return undefined;
}

/** The requests of a JSONL text, or the first problem (`name:line: ...`). */
export function parseRequests(
  text: string,
  name: string,
): { ok: true; value: TrafficRequest[] } | { ok: false; error: string } {
  const out: TrafficRequest[] = [];
  const lines = text.split("\n");
  let last = 0;
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const where = `${name}:${i + 1}`;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      return {
        ok: false,
        error: `${where}: not JSON (${err instanceof Error ? err.message : String(err)})`,
      };
    }
    const duplicate = duplicateKey(line);
    if (duplicate !== undefined) return { ok: false, error: `${where}: ${duplicate}` };
    // A misspelt key named with a guess, as in a RateLimit, before the schema's bare list.
    const unknown = isObject(json) ? unknownKeyErrors(json, LINE_KEYS) : [];
    if (unknown.length > 0) return { ok: false, error: `${where}: ${formatErrors(unknown)}` };
    const parsed = LineSchema.safeParse(json);
    if (!parsed.success) {
      return { ok: false, error: `${where}: ${formatErrors(toFieldErrors(parsed.error, json))}` };
    }
    // The names as written: the schema's record drops `__proto__` without a word.
    const written = (json as { headers?: object }).headers;
    const headerProblem = written && headerNamesProblem(Object.keys(written));
    if (headerProblem) return { ok: false, error: `${where}: headers: ${headerProblem}` };
    const { t: tText, method, path, headers = {}, client, count = 1 } = parsed.data;
    const t = parseGoDuration(tText)!;
    if (t < last) {
      return { ok: false, error: `${where}: t ${tText} is before the previous request's time` };
    }
    if (out.length + count > MAX_REQUESTS) {
      return { ok: false, error: `${where}: more than ${MAX_REQUESTS} requests` };
    }
    last = t;
    for (let n = 0; n < count; n++) {
      out.push({
        t,
        ...(method !== undefined ? { method } : {}),
        path,
        headers,
        ...(client ? { client } : {}),
      });
    }
  }
  return { ok: true, value: out };
}
