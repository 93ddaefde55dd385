/**
 * Per-client buckets (dynamic descriptors, Envoy 1.34 and later) in the data-plane model, against a
 * reference transcribed from Envoy's `dynamic_descriptor.cc` and nothing of the model: a wildcard
 * descriptor's LRU list of at most `max_dynamic_descriptors` request descriptors, a hit spliced to
 * the front, a miss made full at the front and the back dropped past the size; each bucket is
 * `AtomicTokenBucketImpl` made full when its descriptor is added (envoy_reference.ts).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { decide, newProxyState } from "../../src/dataplane/proxy.ts";
import { proxyConfig } from "../../src/dataplane/proxyconfig.ts";
import { byAddressFilter, errorsOf, filter, model, ON, proxy, tb, version } from "./filters.ts";
import { RefAtomic, type RefSpec } from "./envoy_reference.ts";

/** `DynamicDescriptor` of dynamic_descriptor.cc, line by line. */
class RefDynamicDescriptor {
  /** `lru_list_`: index 0 is the front. */
  readonly lruList: string[] = [];
  readonly #descriptors = new Map<string, RefAtomic>();
  constructor(readonly spec: RefSpec, readonly lruSize: number) {}
  addOrGetDescriptor(descriptor: string, nowNs: bigint): RefAtomic {
    const found = this.#descriptors.get(descriptor);
    if (found) {
      const at = this.lruList.indexOf(descriptor);
      if (at !== 0) {
        this.lruList.splice(at, 1);
        this.lruList.unshift(descriptor);
      }
      return found;
    }
    const bucket = new RefAtomic(this.spec, nowNs);
    this.lruList.unshift(descriptor);
    this.#descriptors.set(descriptor, bucket);
    if (this.lruList.length > this.lruSize) {
      this.#descriptors.delete(this.lruList[this.lruList.length - 1]);
      this.lruList.pop();
    }
    return bucket;
  }
}

const CLIENTS = ["a", "b", "c", "d", "e", "f"];

/** A filter with a default bucket and one wildcard descriptor keyed by the header x-client. */
function perClientFilter(def: RefSpec, per: RefSpec, lruSize?: number) {
  const spec = (s: RefSpec) => tb(s.maxTokens, s.tokensPerFill, `${s.fillIntervalMs / 1000}s`);
  return filter({
    token_bucket: spec(def),
    filter_enabled: ON,
    filter_enforced: ON,
    enable_x_ratelimit_headers: "DRAFT_VERSION_03",
    always_consume_default_token_bucket: false,
    ...(lruSize !== undefined ? { max_dynamic_descriptors: lruSize } : {}),
    descriptors: [{ entries: [{ key: "client", value: "" }], token_bucket: spec(per) }],
  }, [{ actions: [{ request_headers: { header_name: "x-client", descriptor_key: "client" } }] }]);
}

const specArb = fc.record({
  maxTokens: fc.integer({ min: 1, max: 3 }),
  tokensPerFill: fc.integer({ min: 1, max: 2 }),
  fillIntervalMs: fc.constantFrom(1000, 2000, 5000),
});

Deno.test("property: per-client buckets, their bound and eviction as Envoy's source has them", () => {
  fc.assert(
    fc.property(
      specArb,
      specArb,
      fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
      fc.array(
        fc.record({
          gapMs: fc.constantFrom(0, 0, 100, 500, 1000, 3000),
          client: fc.option(fc.constantFrom(...CLIENTS), { nil: undefined, freq: 6 }),
        }),
        { maxLength: 60 },
      ),
      (def, per, lruSize, requests) => {
        const state = proxy(perClientFilter(def, per, lruSize));
        const ref = new RefDynamicDescriptor(per, lruSize ?? 20);
        const refDefault = new RefAtomic(def);
        let t = 0;
        for (const r of requests) {
          t += r.gapMs;
          const headers: Record<string, string> = r.client ? { "X-Client": r.client } : {};
          const got = decide(state, { path: "/", headers }, t);
          const nowNs = BigInt(t) * 1_000_000n;
          const bucket = r.client === undefined
            ? refDefault
            : ref.addOrGetDescriptor(JSON.stringify([["client", r.client]]), nowNs);
          const admitted = bucket.consume(nowNs);
          const at = `t=${t} client=${r.client}`;
          assert.equal(got.status, admitted ? 200 : 429, at);
          assert.equal(got.bucket, r.client === undefined ? "default" : 0, at);
          assert.equal(got.client, r.client, at);
          assert.equal(got.headers["x-ratelimit-remaining"], String(bucket.remaining(nowNs)), at);
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("past the bound the least recently used client is dropped and comes back full", () => {
  const one = { maxTokens: 1, tokensPerFill: 1, fillIntervalMs: 60_000 };
  const state = proxy(perClientFilter(one, one, 2));
  const send = (client: string) =>
    decide(state, { path: "/", headers: { "x-client": client } }, 0).status;
  // a and b spend their token; using a again makes b the least recently used.
  assert.deepEqual(["a", "b", "a", "b"].map(send), [200, 200, 429, 429]);
  assert.equal(send("a"), 429);
  // c is the third client: b (least recently used) is dropped, a is kept and still empty.
  assert.equal(send("c"), 200);
  assert.equal(send("a"), 429);
  // b comes back to a new, full bucket; that drops c, the least recently used now.
  assert.equal(send("b"), 200);
  assert.equal(send("c"), 200);
});

Deno.test("default max_dynamic_descriptors is 20: a 21st client drops the first", () => {
  const one = { maxTokens: 1, tokensPerFill: 1, fillIntervalMs: 60_000 };
  const state = proxy(perClientFilter(one, one));
  const send = (client: string) =>
    decide(state, { path: "/", headers: { "x-client": client } }, 0).status;
  const clients = Array.from({ length: 20 }, (_, i) => `c${i}`);
  assert.ok(clients.every((c) => send(c) === 200));
  assert.equal(send("c0"), 429); // kept, and now the most recently used
  assert.equal(send("new"), 200); // drops c1, the least recently used
  assert.equal(send("c1"), 200);
});

Deno.test("Envoy before 1.34 refuses a wildcard descriptor; 0 clients is refused by every Envoy", () => {
  const one = { maxTokens: 1, tokensPerFill: 1, fillIntervalMs: 1000 };
  assert.match(
    errorsOf(perClientFilter(one, one), "1.33"),
    /descriptors\[0\]\.entries\[0\]\.value: .*no wildcard descriptors; they came in 1\.34/,
  );
  assert.match(errorsOf(perClientFilter(one, one, 0)), /max_dynamic_descriptors/);
});

Deno.test("remote_address: a sidecar trusts x-forwarded-for's last address, a gateway its peer", () => {
  const byAddress = byAddressFilter(1);
  const sidecar = proxy(byAddress);
  const ask = (peer: string | undefined, xff?: string) =>
    decide(sidecar, {
      path: "/",
      ...(peer ? { peer } : {}),
      headers: xff ? { "X-Forwarded-For": xff } : {},
    }, 0);
  assert.equal(ask("10.0.0.1").client, "10.0.0.1");
  assert.equal(ask("10.0.0.1").status, 429);
  // Behind a gateway the sidecar's client is the last x-forwarded-for address.
  assert.equal(ask("10.0.0.1", "1.2.3.4, 10.9.9.9").client, "10.9.9.9");
  // Not an address: the peer.
  assert.equal(ask("10.0.0.1", "unknown").client, "10.0.0.1");
  // No address at all: no descriptor, the default bucket.
  assert.equal(ask(undefined).bucket, "default");
  const gateway = newProxyState(
    proxyConfig([model(byAddress)], "SIDECAR_INBOUND"),
    0,
    version("1.38"),
    true,
  );
  const g = decide(gateway, {
    path: "/",
    peer: "10.0.0.2",
    headers: { "x-forwarded-for": "6.6.6.6" },
  }, 0);
  assert.equal(g.client, "10.0.0.2");
});
