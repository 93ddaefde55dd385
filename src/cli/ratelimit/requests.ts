/** Reads the `--requests` file: one JSON object a line, `count` expanded, times in order. */
import { z } from "zod";
import { parseGoDuration } from "../../api/duration.ts";
import { formatErrors, toFieldErrors } from "../../api/issues.ts";
import { MAX_REQUESTS, type TrafficRequest } from "./args.ts";

const LineSchema = z.strictObject({
  t: z.string().refine((s) => parseGoDuration(s) !== undefined, {
    error: (iss) => `${JSON.stringify(iss.input)} is not a duration like 1.5s`,
  }),
  path: z.string().regex(/^\//, {
    error: (iss) => `${JSON.stringify(iss.input)} does not start with /`,
  }),
  headers: z.record(z.string(), z.string()).optional(),
  client: z.string().min(1).max(256).optional(),
  count: z.int().min(1).optional(),
});

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
    const parsed = LineSchema.safeParse(json);
    if (!parsed.success) {
      return { ok: false, error: `${where}: ${formatErrors(toFieldErrors(parsed.error, json))}` };
    }
    const { t: tText, path, headers = {}, client, count = 1 } = parsed.data;
    const t = parseGoDuration(tText)!;
    if (t < last) {
      return { ok: false, error: `${where}: t ${tText} is before the previous request's time` };
    }
    if (out.length + count > MAX_REQUESTS) {
      return { ok: false, error: `${where}: more than ${MAX_REQUESTS} requests` };
    }
    last = t;
    for (let n = 0; n < count; n++) out.push({ t, path, headers, ...(client ? { client } : {}) });
  }
  return { ok: true, value: out };
}
