/**
 * The engine's configuration of a RateLimit's domain (src/reconcile/ratelimit/engine_config.ts):
 * exact configurations for path, header, per-client, default and shadow specs; one descriptor
 * chain for each entry list `globalEntries` emits; for random global parts, the engine's own
 * load-time rules find nothing and every request descriptor the route actions can send resolves,
 * through a model of the engine's GetLimit (envoyproxy/ratelimit src/config/config_impl.go), to
 * exactly its rule's limit; the checker's refusals; the `/rlconfig` lines; the annotation written
 * by the render and read back strictly; and the snapshot of the operator's filters. The lines are
 * checked against a real engine in tests/kube/engine_xds_test.ts.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  checkEngineDomain,
  type EngineDescriptor,
  type EngineDomainConfig,
  engineDomainOf,
  engineDomainOfFilter,
  type EngineRateLimit,
  rlconfigLines,
  snapshotOf,
} from "../../src/reconcile/ratelimit/engine_config.ts";
import { parseRlconfig } from "../../src/api/engine_status.ts";
import { globalEntries, renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";
import { parseRateLimit, type RateLimit } from "../../src/api/ratelimit.ts";
import { ENGINE_DOMAIN_ANNOTATION } from "../../src/api/global_engine.ts";
import type { DescriptorEntry } from "../../src/api/envoy.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { rateLimit } from "./ratelimit_fixtures.ts";

/** A parsed RateLimit with `global` (and enforce) as written. */
function parsed(global: unknown, more: { enforce?: boolean; name?: string } = {}): RateLimit {
  const r = parseRateLimit(rateLimit({ global, ...more }));
  assert.ok(r.ok, JSON.stringify(!r.ok && r.errors));
  return r.value;
}

function configOf(rl: RateLimit): EngineDomainConfig {
  const c = engineDomainOf(rl.metadata.namespace!, rl.metadata.name, rl.spec);
  assert.ok(c, "a global part has a configuration");
  return c;
}

const limit = (requestsPerUnit: number, unit: EngineRateLimit["unit"]) => ({
  rateLimit: { unit, requestsPerUnit },
});

Deno.test("path rules: each rule's chain excludes the earlier rules it can overlap, limit on the last", () => {
  const rl = parsed({
    rules: [
      { path: "/a", limit: { requests: 5, unit: "Second" } },
      { path: "/b", limit: { requests: 6, unit: "Minute" } },
      { headers: { "X-Tier": "free" }, limit: { requests: 7, unit: "Hour" } },
    ],
  });
  assert.deepEqual(configOf(rl), {
    domain: "demo/httpbin",
    descriptors: [
      { key: "rule", value: "0", ...limit(5, "SECOND") },
      // /b cannot overlap /a: nothing to exclude.
      { key: "rule", value: "1", ...limit(6, "MINUTE") },
      // A header rule overlaps both path rules: two clauses each (exact path, path with query).
      {
        key: "rule",
        value: "2",
        descriptors: [{
          key: "not_rule",
          value: "0",
          descriptors: [{
            key: "not_rule",
            value: "0",
            descriptors: [{
              key: "not_rule",
              value: "1",
              descriptors: [{ key: "not_rule", value: "1", ...limit(7, "HOUR") }],
            }],
          }],
        }],
      },
    ],
  });
});

Deno.test("header rules and path with headers: rule_headers follows rule", () => {
  const rl = parsed({
    rules: [{ path: "/x", headers: { "X-A": "1" }, limit: { requests: 9, unit: "Day" } }],
  });
  assert.deepEqual(configOf(rl).descriptors, [{
    key: "rule",
    value: "0",
    descriptors: [{ key: "rule_headers", value: "0", ...limit(9, "DAY") }],
  }]);
});

Deno.test("per-client rules: the client's entry is a key without value, by header or by address", () => {
  const rl = parsed({
    rules: [
      { path: "/h", perClient: { header: "X-Api-Key" }, limit: { requests: 3, unit: "Minute" } },
      { path: "/ip", perClient: { clientIP: true }, limit: { requests: 4, unit: "Minute" } },
    ],
  });
  assert.deepEqual(configOf(rl).descriptors, [
    {
      key: "rule",
      value: "0",
      descriptors: [{
        key: "rule_headers",
        value: "0",
        descriptors: [{ key: "client", ...limit(3, "MINUTE") }],
      }],
    },
    { key: "rule", value: "1", descriptors: [{ key: "remote_address", ...limit(4, "MINUTE") }] },
  ]);
  // What the route actions send: the client's entry with an empty value, which Envoy fills.
  const entries = globalEntries(rl.spec.global!).map((e) => e.entries);
  assert.deepEqual(entries[0].at(-1), { key: "client", value: "" });
  assert.deepEqual(entries[1].at(-1), { key: "remote_address", value: "" });
});

Deno.test("the default: a chain named default excluding every rule; alone, one descriptor", () => {
  const alone = parsed({ default: { limit: { requests: 100, unit: "Hour" } } });
  assert.deepEqual(configOf(alone).descriptors, [
    { key: "rule", value: "default", ...limit(100, "HOUR") },
  ]);
  const withRule = parsed({
    rules: [{ headers: { "X-A": "1" }, limit: { requests: 1, unit: "Second" } }],
    default: { limit: { requests: 2, unit: "Second" } },
  });
  assert.deepEqual(configOf(withRule).descriptors[1], {
    key: "rule",
    value: "default",
    descriptors: [{ key: "not_rule", value: "0", ...limit(2, "SECOND") }],
  });
});

Deno.test("shadow mode: every limit has shadowMode, and only with enforce false", () => {
  const global = {
    rules: [{ path: "/a", perClient: { clientIP: true }, limit: { requests: 1, unit: "Second" } }],
    default: { limit: { requests: 2, unit: "Second" } },
  };
  const limited = (c: EngineDomainConfig) => flatten(c).map((l) => l.descriptor);
  const shadow = configOf(parsed(global, { enforce: false }));
  assert.ok(limited(shadow).length === 2);
  assert.ok(limited(shadow).every((d) => d.shadowMode === true));
  const enforced = configOf(parsed(global, { enforce: true }));
  assert.ok(limited(enforced).every((d) => d.shadowMode === undefined));
  // Never on a descriptor without a limit (the engine reads it only with one).
  const all = (ds: EngineDescriptor[]): EngineDescriptor[] =>
    ds.flatMap((d) => [d, ...all(d.descriptors ?? [])]);
  assert.ok(all(shadow.descriptors).every((d) => (d.shadowMode === true) === !!d.rateLimit));
});

Deno.test("no global part: no configuration", () => {
  const r = parseRateLimit(rateLimit({}));
  assert.ok(r.ok);
  assert.equal(engineDomainOf("demo", "httpbin", r.value.spec), undefined);
});

/** Each descriptor with a limit: the entry list leading to it, and it. */
function flatten(
  c: EngineDomainConfig,
): { entries: DescriptorEntry[]; descriptor: EngineDescriptor }[] {
  const out: { entries: DescriptorEntry[]; descriptor: EngineDescriptor }[] = [];
  const walk = (ds: readonly EngineDescriptor[], path: DescriptorEntry[]) => {
    for (const d of ds) {
      const here = [...path, { key: d.key, value: d.value ?? "" }];
      if (d.rateLimit) out.push({ entries: here, descriptor: d });
      walk(d.descriptors ?? [], here);
    }
  };
  walk(c.descriptors, []);
  return out;
}

/**
 * envoyproxy/ratelimit's GetLimit for one request descriptor (config_impl.go), for the
 * configurations the operator writes (no wildcards, no detailed metrics, no override): at each
 * entry `key_value`, else `key`; the limit only of the descriptor the last entry reaches; the walk
 * stops where the configuration has nothing deeper.
 */
function getLimit(
  c: EngineDomainConfig,
  domain: string,
  entries: readonly DescriptorEntry[],
): EngineDescriptor | undefined {
  if (domain !== c.domain) return undefined;
  const levelOf = (ds: readonly EngineDescriptor[]) =>
    new Map(
      ds.map((d) => [d.value !== undefined && d.value !== "" ? `${d.key}_${d.value}` : d.key, d]),
    );
  let level = levelOf(c.descriptors);
  let found: EngineDescriptor | undefined;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    const next = level.get(`${e.key}_${e.value}`) ?? level.get(e.key);
    if (next?.rateLimit && i === entries.length - 1) found = next;
    if (next?.descriptors && next.descriptors.length > 0) level = levelOf(next.descriptors);
    else break;
  }
  return found;
}

/**
 * Problems with `c` as the configuration of `rl`: the engine's rules, a chain for each entry list
 * and nothing else, and each entry list (its per-client value filled as a request fills it)
 * resolving to exactly its rule's limit.
 */
function mismatches(rl: RateLimit, c: EngineDomainConfig, client: string): string[] {
  const out = checkEngineDomain(c);
  const global = rl.spec.global!;
  const lists = globalEntries(global);
  const rules = global.rules ?? [];
  const chains = flatten(c);
  if (chains.length !== lists.length) {
    out.push(`${chains.length} limits for ${lists.length} entry lists`);
  }
  lists.forEach(({ entries }, i) => {
    const want = i < rules.length ? rules[i].limit : global.default!.limit;
    const sent = entries.map((e) => e.value === "" ? { key: e.key, value: client } : e);
    const got = getLimit(c, `${rl.metadata.namespace}/${rl.metadata.name}`, sent);
    const wantLimit = { unit: want.unit.toUpperCase(), requestsPerUnit: want.requests };
    if (JSON.stringify(got?.rateLimit) !== JSON.stringify(wantLimit)) {
      out.push(
        `entry list ${i} resolves to ${JSON.stringify(got?.rateLimit)}, not ${
          JSON.stringify(wantLimit)
        }`,
      );
    }
    if ((got?.shadowMode === true) !== !rl.spec.enforce) out.push(`entry list ${i}: shadow mode`);
    // The chain holds the list itself, the per-client value empty.
    if (JSON.stringify(chains[i]?.entries) !== JSON.stringify(entries)) {
      out.push(
        `chain ${i} is ${JSON.stringify(chains[i]?.entries)}, not ${JSON.stringify(entries)}`,
      );
    }
  });
  return out;
}

const limitArb = fc.record({
  requests: fc.integer({ min: 1, max: 4294967295 }),
  unit: fc.constantFrom("Second", "Minute", "Hour", "Day"),
});
const ruleArb = fc.record({
  path: fc.option(fc.constantFrom("/a", "/b", "/a/b", "/c"), { nil: undefined }),
  headers: fc.option(
    fc.dictionary(fc.constantFrom("X-A", "x-a", "X-B", "X-Tier"), fc.constantFrom("1", "2"), {
      minKeys: 1,
      maxKeys: 2,
    }),
    { nil: undefined },
  ),
  perClient: fc.option(
    fc.oneof(
      fc.record({ header: fc.constantFrom("X-Api-Key", "X-A") }),
      fc.constant({ clientIP: true }),
    ),
    { nil: undefined },
  ),
  limit: limitArb,
}).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)));
const globalArb = fc.record({
  rules: fc.option(fc.array(ruleArb, { minLength: 1, maxLength: 8 }), { nil: undefined }),
  default: fc.option(fc.record({ limit: limitArb }), { nil: undefined }),
  failureMode: fc.constantFrom("Allow", "Deny"),
}).map((g) => Object.fromEntries(Object.entries(g).filter(([, v]) => v !== undefined)));

Deno.test("property: for random global parts the engine refuses nothing and every entry list resolves to its rule's limit", () => {
  let checked = 0;
  fc.assert(
    fc.property(
      globalArb,
      fc.boolean(),
      fc.string({ minLength: 1, maxLength: 12 }),
      (global, enforce, client) => {
        const r = parseRateLimit(rateLimit({ global, enforce, local: false }));
        // A rule without path, headers or perClient is refused by the API: not a global part.
        fc.pre(r.ok);
        const rl = r.value;
        assert.deepEqual(mismatches(rl, configOf(rl), client), []);
        checked++;
      },
    ),
    { numRuns: 400 },
  );
  assert.ok(checked > 200, `only ${checked} valid specs`);
});

Deno.test("the property's check fails a configuration built wrong (limit on the first entry; value kept empty)", () => {
  const rl = parsed({
    rules: [
      { path: "/a", limit: { requests: 5, unit: "Second" } },
      {
        headers: { "X-A": "1" },
        perClient: { header: "X-Key" },
        limit: { requests: 6, unit: "Minute" },
      },
    ],
    default: { limit: { requests: 7, unit: "Hour" } },
  });
  const good = configOf(rl);
  assert.deepEqual(mismatches(rl, good, "alice"), []);
  // Broken 1: the limit on the first descriptor of each chain, the rest dropped.
  const first: EngineDomainConfig = {
    domain: good.domain,
    descriptors: good.descriptors.map((d) => {
      const leaf = flatten({ domain: good.domain, descriptors: [d] })[0].descriptor;
      return { key: d.key, value: d.value, rateLimit: leaf.rateLimit };
    }),
  };
  assert.ok(mismatches(rl, first, "alice").some((m) => m.startsWith("entry list 1 resolves")));
  // Broken 2: the per-client entry as a key with an empty value ("client_" never matches a client).
  const keepEmpty = structuredClone(good);
  const clientOf = flatten(keepEmpty).find((l) => l.descriptor.key === "client")!.descriptor;
  clientOf.value = "";
  // `value: ""` is the engine's key-only too (its finalKey drops an empty value): the same.
  assert.deepEqual(mismatches(rl, keepEmpty, "alice"), []);
  clientOf.value = "*";
  assert.ok(mismatches(rl, keepEmpty, "alice").some((m) => m.includes("wildcard")));
  // Broken 3: the chains of two rules swapped limits.
  const swapped = structuredClone(good);
  const [a, b] = flatten(swapped).map((l) => l.descriptor);
  [a.rateLimit, b.rateLimit] = [b.rateLimit, a.rateLimit];
  assert.ok(mismatches(rl, swapped, "alice").some((m) => m.startsWith("entry list 0 resolves")));
});

Deno.test("checkEngineDomain: the engine's refusals, each named", () => {
  const d = (x: Partial<EngineDescriptor>): EngineDescriptor => ({ key: "rule", ...x });
  const problems = (descriptors: EngineDescriptor[], domain = "ns/a") =>
    checkEngineDomain({ domain, descriptors });
  assert.deepEqual(problems([d({ value: "0", ...limit(1, "SECOND") })]), []);
  assert.deepEqual(problems([], ""), ["config file cannot have empty domain"]);
  assert.deepEqual(problems([d({ key: "" })]), ["ns/a.: descriptor has empty key"]);
  assert.deepEqual(problems([d({ value: "0" }), d({ value: "0" })]), [
    "duplicate descriptor composite key 'ns/a.rule_0'",
  ]);
  // Key only and key with an empty value are the same composite key to the engine.
  assert.deepEqual(
    problems([
      d({ value: "0", descriptors: [d({ key: "client" }), d({ key: "client", value: "" })] }),
    ]),
    ["duplicate descriptor composite key 'ns/a.rule_0.client'"],
  );
  // The same key at different levels is fine.
  assert.deepEqual(
    problems([d({ value: "0", descriptors: [d({ value: "0", ...limit(1, "SECOND") })] })]),
    [],
  );
  assert.deepEqual(
    problems([d({ rateLimit: { unit: "WEEK" as never, requestsPerUnit: 1 } })]),
    ["ns/a.rule: invalid rate limit unit 'WEEK'"],
  );
  for (const n of [-1, 1.5, 4294967296]) {
    assert.deepEqual(problems([d({ ...limit(n, "SECOND") })]), [
      `ns/a.rule: requests_per_unit ${n} is not an integer from 0 to 4294967295`,
    ]);
  }
  assert.deepEqual(problems([d({ value: "a*" })]), [
    "'ns/a.rule_a*' ends in '*', which the engine reads as a wildcard",
  ]);
});

Deno.test("rlconfigLines: one sorted line per limit, as the engine's Dump writes it", () => {
  const rl = parsed({
    rules: [
      { path: "/b", perClient: { header: "X-Key" }, limit: { requests: 7, unit: "Minute" } },
      { path: "/a", limit: { requests: 5, unit: "Second" } },
    ],
    default: { limit: { requests: 100, unit: "Hour" } },
  }, { enforce: false });
  const lines = rlconfigLines(configOf(rl));
  assert.deepEqual(lines, [
    "demo/httpbin.rule_0.rule_headers_0.client: unit=MINUTE requests_per_unit=7, shadow_mode: true, quota_mode: false",
    "demo/httpbin.rule_1: unit=SECOND requests_per_unit=5, shadow_mode: true, quota_mode: false",
    "demo/httpbin.rule_default.not_rule_0.not_rule_0.not_rule_1.not_rule_1: unit=HOUR requests_per_unit=100, shadow_mode: true, quota_mode: false",
  ]);
  // A dump of several domains, in any order: this domain's lines, and not a longer name's.
  const other = rlconfigLines(
    configOf(parsed({ default: { limit: { requests: 1, unit: "Day" } } }, {
      name: "httpbin.rule",
    })),
  );
  assert.equal(other[0].startsWith("demo/httpbin.rule.rule_default:"), true);
  const dump = [...other, ...lines].reverse().join("\n") + "\n";
  // As the operator reads an engine's answer: this domain's lines, and not a longer name's.
  assert.deepEqual(parseRlconfig(dump), {
    ok: true,
    domains: { "demo/httpbin": lines, "demo/httpbin.rule": other },
  });
});

const GLOBAL = {
  rules: [{ path: "/a", perClient: { header: "X-Key" }, limit: { requests: 5, unit: "Minute" } }],
  default: { limit: { requests: 50, unit: "Hour" } },
};

Deno.test("the render writes the domain's configuration on the filter with the global part, none without", () => {
  const rl = parsed(GLOBAL);
  const withGlobal = renderEnvoyFilter(rl, undefined, { global: true });
  const text = withGlobal.metadata.annotations?.[ENGINE_DOMAIN_ANNOTATION];
  assert.ok(text);
  assert.deepEqual(JSON.parse(text), configOf(rl));
  const problems: string[] = [];
  assert.deepEqual(engineDomainOfFilter(withGlobal, problems), configOf(rl));
  assert.deepEqual(problems, []);
  const localOnly = renderEnvoyFilter(rl, undefined, { global: false });
  assert.equal(localOnly.metadata.annotations?.[ENGINE_DOMAIN_ANNOTATION], undefined);
  assert.equal(engineDomainOfFilter(localOnly, problems), undefined);
  assert.deepEqual(problems, []);
});

/** `filter` with its annotation replaced by `text`. */
function annotated(filter: KubeObject, text: string): KubeObject {
  return {
    ...filter,
    metadata: {
      ...filter.metadata,
      annotations: { ...filter.metadata.annotations, [ENGINE_DOMAIN_ANNOTATION]: text },
    },
  };
}

Deno.test("engineDomainOfFilter reads strictly: each malformed annotation is undefined with a reason", () => {
  const filter = renderEnvoyFilter(parsed(GLOBAL), undefined, { global: true });
  const good = JSON.parse(filter.metadata.annotations![ENGINE_DOMAIN_ANNOTATION]);
  const deep = (n: number): unknown =>
    n === 0 ? { key: "k" } : { key: "k", descriptors: [deep(n - 1)] };
  const cases: [string, string][] = [
    ["not JSON", "{"],
    ["not an object", "[]"],
    ['unknown field "extra"', JSON.stringify({ ...good, extra: 1 })],
    ["domain: not a string", JSON.stringify({ ...good, domain: 1 })],
    [
      'domain "demo/other" is not the filter\'s demo/httpbin',
      JSON.stringify({ ...good, domain: "demo/other" }),
    ],
    ["descriptors: not a list", JSON.stringify({ domain: good.domain })],
    [
      "descriptors[0].key: not a string",
      JSON.stringify({ ...good, descriptors: [{ value: "x" }] }),
    ],
    [
      'descriptors[0]: unknown field "rate_limit"',
      JSON.stringify({ ...good, descriptors: [{ key: "k", rate_limit: {} }] }),
    ],
    [
      "descriptors[0].rateLimit.unit: not one of SECOND, MINUTE, HOUR, DAY",
      JSON.stringify({
        ...good,
        descriptors: [{ key: "k", rateLimit: { unit: "WEEK", requestsPerUnit: 1 } }],
      }),
    ],
    [
      "descriptors[0].rateLimit.requestsPerUnit: not an integer",
      JSON.stringify({
        ...good,
        descriptors: [{ key: "k", rateLimit: { unit: "DAY", requestsPerUnit: -1 } }],
      }),
    ],
    [
      "descriptors[0].shadowMode: not a boolean",
      JSON.stringify({ ...good, descriptors: [{ key: "k", shadowMode: "yes" }] }),
    ],
    ["nested deeper than 64", JSON.stringify({ ...good, descriptors: [deep(100)] })],
  ];
  for (const [why, text] of cases) {
    const problems: string[] = [];
    assert.equal(engineDomainOfFilter(annotated(filter, text), problems), undefined, why);
    assert.equal(problems.length, 1, why);
    assert.ok(problems[0].includes(why), `${why}: ${problems[0]}`);
    assert.ok(
      problems[0].startsWith(`EnvoyFilter demo/httpbin annotation ${ENGINE_DOMAIN_ANNOTATION}: `),
    );
  }
  // Never a throw, whatever the text.
  fc.assert(fc.property(fc.oneof(fc.string(), fc.json()), (text) => {
    const problems: string[] = [];
    const c = engineDomainOfFilter(annotated(filter, text), problems);
    assert.ok(c !== undefined || problems.length === 1);
  }));
});

Deno.test("snapshotOf: the domains of the operator's RateLimit filters, sorted; others and malformed ones left out", () => {
  const render = (name: string, global: boolean) =>
    renderEnvoyFilter(parsed(GLOBAL, { name }), undefined, { global });
  const b = render("b", true);
  const a = render("a", true);
  const localOnly = render("c", false);
  const notOurs = { ...render("d", true), metadata: { ...render("d", true).metadata, labels: {} } };
  const broken = annotated(render("e", true), "{");
  const problems: string[] = [];
  const snapshot = snapshotOf([b, localOnly, notOurs, broken, a], problems);
  assert.deepEqual(snapshot.map((c) => c.domain), ["demo/a", "demo/b"]);
  assert.deepEqual(snapshot[0], engineDomainOfFilter(a));
  assert.equal(problems.length, 1);
  assert.match(problems[0], /^EnvoyFilter demo\/e annotation .*: not JSON/);
});
