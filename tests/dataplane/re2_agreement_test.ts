/**
 * The data-plane model's regexes held to Google's RE2 (tools/re2-check, Debian's libre2), the
 * library Envoy's `safe_regex` runs. The model matches with JavaScript's RegExp
 * (src/dataplane/matchers.ts); here every regex the operator renders for `methods`, `hosts` and
 * `queryParams` compiles in RE2 within the program size Istio sets for every proxy
 * (`re2.max_program_size.error_level` 32,768), the sizes the docs give are RE2's, and on request
 * values made to sit on either side of each rule (other letter cases, ports, trailing dots,
 * percent-encodings in either hex case, repeated and near-miss parameters) the model answers as
 * RE2 does. Values are printable ASCII: Envoy answers 400 to a request whose authority or path has
 * anything else (RE2's `(?i)` also folds the Kelvin sign into `k`, which JavaScript does not).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseRateLimit, type RateLimit } from "../../src/api/ratelimit.ts";
import { compileStringMatcher } from "../../src/dataplane/matchers.ts";
import { renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";
import { validateSpec } from "../../src/reconcile/ratelimit/validate.ts";
import { HTTP_METHODS } from "../../src/api/ratelimit_bounds.ts";
import { Re2 } from "../../tools/re2-check/client.ts";
import { largestRateLimit } from "../reconcile/ratelimit_extremes.ts";

/** What Istio's pilot-agent sets as every proxy's `re2.max_program_size.error_level`. */
const ISTIO_RE2_ERROR_LEVEL = 32768;

/** Each `safe_regex` of a rendered filter, with the header it matches. */
function regexesOf(value: unknown, header = ""): { header: string; regex: string }[] {
  if (Array.isArray(value)) return value.flatMap((v) => regexesOf(v, header));
  if (value === null || typeof value !== "object") return [];
  const o = value as Record<string, unknown>;
  const name = typeof o.name === "string" ? o.name : header;
  const out: { header: string; regex: string }[] = [];
  const re = (o.safe_regex as { regex?: unknown } | undefined)?.regex;
  if (typeof re === "string") out.push({ header, regex: re });
  for (const v of Object.values(o)) out.push(...regexesOf(v, name));
  return out;
}

function parsed(raw: unknown): RateLimit {
  const p = parseRateLimit(raw);
  if (!p.ok) throw new Error(JSON.stringify(p.errors));
  return p.value;
}

function spec(buckets: unknown[]): RateLimit {
  return parsed({
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "rl", namespace: "demo", uid: "u" },
    spec: {
      selectorLabels: { app: "httpbin" },
      local: {
        defaultBucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "1m" },
        buckets: buckets.map((b) => ({
          ...(b as object),
          bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "1m" },
        })),
      },
    },
  });
}

/** `%HH` for a character, hex letters upper or lower. */
const encode = (c: string, upper: boolean) => {
  const h = c.charCodeAt(0).toString(16).padStart(2, "0");
  return `%${upper ? h.toUpperCase() : h}`;
};

/** Spellings of a Host around a rule's host: other cases, ports, dots, near misses. */
function hostValues(host: string): string[] {
  const name = host.startsWith("*.") ? `a${host.slice(1)}` : host;
  return [
    name,
    name.toUpperCase(),
    `${name}:8080`,
    `${name}.`,
    `${name}.:443`,
    `${name}:`,
    `${name}..`,
    `${name}x`,
    `x${name}`,
    `a.b.${name}`,
    name.slice(name.indexOf(".") + 1),
    `${name}:80:80`,
    `${name}:8a`,
  ];
}

/** Request paths around a rule's query parameter: encodings, repeats, near misses. */
function queryValues(name: string, value: string): string[] {
  const enc = (s: string, every: boolean, upper: boolean) =>
    [...s].map((c, i) => (every || i % 2 === 0 ? encode(c, upper) : c)).join("");
  const pair = value === "" ? name : `${name}=${value}`;
  return [
    `/p?${pair}`,
    `/p?${name}=${value}`,
    `/p?x=1&${pair}`,
    `/p?${pair}&x=1`,
    `/p?${name}=other&${pair}`,
    `/p?${enc(name, true, true)}=${enc(value, true, false)}`,
    `/p?${enc(name, false, false)}=${enc(value, false, true)}`,
    `/p?${name}=${value}x`,
    `/p?x${name}=${value}`,
    `/p?${name}x=${value}`,
    `/p?${name.toUpperCase()}=${value.toUpperCase()}`,
    `/p?${name}=${value}#`,
    `/p?${name}=${value}&`,
    `/p?${name}`,
    `/p?${name}=`,
    `/p${pair}`,
    `/p?a?${pair}`,
    `/p?${name}=${enc(value, true, true).replace(/%/g, "%25")}`,
  ];
}

const METHOD_VALUES = [...HTTP_METHODS, "get", "Get", "GETX", "XGET", "", "GE", "PATCHPATCH"];

/**
 * Asks RE2 and the model about every regex of `rl`'s filter on the values its rules call for;
 * returns each regex, its header and its program size.
 */
async function agree(
  re2: Re2,
  rl: RateLimit,
): Promise<{ header: string; regex: string; size: number }[]> {
  const rules = rl.spec.local?.buckets ?? [];
  const values: Record<string, string[]> = {
    ":method": METHOD_VALUES,
    ":authority": rules.flatMap((r) => (r.hosts ?? []).flatMap(hostValues)),
    ":path": rules.flatMap((r) =>
      Object.entries(r.queryParams ?? {}).flatMap(([n, v]) => queryValues(n, v))
    ),
  };
  const sizes = new Map<string, { header: string; regex: string; size: number }>();
  for (const { header, regex } of regexesOf(renderEnvoyFilter(rl))) {
    if (sizes.has(regex)) continue;
    const compiled = await re2.compile(regex);
    assert.ok(compiled.ok, `${regex}: ${JSON.stringify(compiled)}`);
    sizes.set(regex, { header, regex, size: compiled.programSize });
    const model = compileStringMatcher({ safe_regex: { regex } });
    const tried = values[header];
    assert.ok(tried && tried.length > 0, `no values for ${header}`);
    for (const v of tried) {
      assert.equal(
        model(v),
        await re2.matches(v),
        `${header} ${JSON.stringify(v)} against ${regex}`,
      );
    }
  }
  return [...sizes.values()];
}

Deno.test("RE2 compiles every regex of the largest RateLimits within Istio's limit, and the model answers as RE2", async () => {
  const re2 = await Re2.start();
  try {
    let largest = 0;
    for (let q = 0; q <= 4; q++) {
      for (const fill of ["plain", "escaped"] as const) {
        const sizes = await agree(re2, parsed(largestRateLimit(fill, "workload", q)));
        largest = Math.max(largest, ...sizes.map((r) => r.size));
      }
    }
    assert.ok(largest <= ISTIO_RE2_ERROR_LEVEL, `${largest}`);
  } finally {
    await re2.close();
  }
});

Deno.test("RE2's program sizes are the docs': methods 47, format=csv 71, the longest query parameter 323, hosts at most 2,067", async () => {
  const re2 = await Re2.start();
  try {
    const size = async (buckets: unknown[], header: string) =>
      Math.max(
        ...(await agree(re2, spec(buckets))).filter((r) => r.header === header)
          .map((r) => r.size),
      );
    assert.equal(await size([{ methods: [...HTTP_METHODS] }], ":method"), 47);
    assert.equal(await size([{ queryParams: { format: "csv" } }], ":path"), 71);
    assert.equal(await size([{ queryParams: { ["[".repeat(32)]: "?".repeat(40) } }], ":path"), 323);
    // Hosts: `k` and `s` fold to three characters each (RE2 folds U+212A and U+017F too), the
    // most a letter can; every length a rule's hosts can share 512 characters in, wildcards or not.
    let hosts = 0;
    for (const letter of ["k", "s", "a"]) {
      for (const count of [1, 2, 3, 4]) {
        for (const wild of [true, false]) {
          const each = Math.min(253, Math.floor(512 / count));
          const prefix = wild ? "*." : "";
          // Distinct hosts of the letter alone: another letter at a place of each one's own.
          const other = letter === "k" ? "s" : "k";
          const list = Array.from({ length: count }, (_, i) => {
            const body = [...letter.repeat(each - prefix.length)];
            body[i] = other;
            return `${prefix}${body.join("")}`;
          });
          hosts = Math.max(hosts, await size([{ hosts: list }], ":authority"));
        }
      }
    }
    assert.equal(hosts, 2067);
  } finally {
    await re2.close();
  }
});

Deno.test("property: on drawn methods, hosts and query parameters the model's regexes answer as RE2's", async () => {
  const re2 = await Re2.start();
  const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?$/);
  const host = fc.tuple(fc.boolean(), fc.array(label, { minLength: 1, maxLength: 3 })).map((
    [wild, labels],
  ) => `${wild ? "*." : ""}${labels.join(".")}`);
  const nameChar = fc.constantFrom(..."aZ09._~-[]");
  const valueChar = fc.constantFrom(..."aZ09._~-!$'()*,/:;=?@[]");
  const rule = fc.record({
    methods: fc.option(fc.subarray([...HTTP_METHODS], { minLength: 1 }), { nil: undefined }),
    hosts: fc.option(fc.uniqueArray(host, { minLength: 1, maxLength: 4 }), { nil: undefined }),
    queryParams: fc.option(
      fc.dictionary(
        fc.array(nameChar, { minLength: 1, maxLength: 6 }).map((cs) => cs.join("")),
        fc.array(valueChar, { maxLength: 6 }).map((cs) => cs.join("")),
        { minKeys: 1, maxKeys: 3 },
      ),
      { nil: undefined },
    ),
  }).filter((r) => r.methods !== undefined || r.hosts !== undefined || r.queryParams !== undefined)
    .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)));
  let tried = 0;
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(rule, { minLength: 1, maxLength: 3 }), async (rules) => {
        const rl = spec(rules);
        if (validateSpec(rl.spec).length > 0) return;
        tried++;
        await agree(re2, rl);
      }),
      { seed: 23, numRuns: 150 },
    );
  } finally {
    await re2.close();
  }
  assert.ok(tried > 100, `only ${tried} valid drawn RateLimits`);
});
