/**
 * Which Envoy a proxy runs, from the Istio version istiod reports for it (src/api/envoy.ts): the
 * table's rows, how a version reads (as istiod's ParseIstioVersion reads it), the bounds outside
 * the table, what is unknown, and docs/ratelimit.md's version table against the data.
 */
import assert from "node:assert/strict";
import {
  DYNAMIC_DESCRIPTORS_MINOR,
  envoyOfIstio,
  ISTIO_ENVOY,
  ISTIO_ENVOY_ROWS,
  NEWEST_ISTIO,
  PER_CLIENT_NEEDS,
  proxyEnvoyText,
  refusesPerClient,
} from "../../src/api/envoy.ts";
import { envoyBehaviour } from "../../src/dataplane/mod.ts";

const minor = (v: string) => Number(v.split(".")[1]);

Deno.test("the table: one row a release, consecutive, each with its source, Envoy only growing", () => {
  for (let i = 1; i < ISTIO_ENVOY_ROWS.length; i++) {
    const [a, b] = [ISTIO_ENVOY_ROWS[i - 1], ISTIO_ENVOY_ROWS[i]];
    assert.equal(minor(b.istio), minor(a.istio) + 1, "no Istio release left out");
    assert.ok(minor(b.envoy) > minor(a.envoy), `${b.istio} ships a newer Envoy than ${a.istio}`);
  }
  for (const r of ISTIO_ENVOY_ROWS) {
    assert.match(r.source, /istio\/proxy branch release-/, r.istio);
    assert.ok(r.source.includes(`release-${r.istio}`), r.source);
    // Each listed Envoy is one the data-plane model follows (the preview's --envoy).
    assert.ok(envoyBehaviour(r.envoy).ok, r.envoy);
  }
  assert.equal(ISTIO_ENVOY["1.25"], "1.33");
  assert.equal(ISTIO_ENVOY["1.26"], "1.34");
  assert.equal(ISTIO_ENVOY[NEWEST_ISTIO], "1.38");
  assert.equal(PER_CLIENT_NEEDS, "Envoy 1.34 (Istio 1.26) or later");
});

Deno.test("a reported Istio version reads as istiod reads it, and gives its Envoy", () => {
  const cases: [string, string | undefined][] = [
    ["1.25.2", "Istio 1.25.2, Envoy 1.33"],
    ["1.26.0", "Istio 1.26.0, Envoy 1.34"],
    ["1.26.0-beta.1", "Istio 1.26.0-beta.1, Envoy 1.34"],
    ["1.27-dev", "Istio 1.27-dev, Envoy 1.35"],
    ["release-1.28", "Istio release-1.28, Envoy 1.36"],
    ["1.30.1", "Istio 1.30.1, Envoy 1.38"],
    // Newer than the table: the newest listed Envoy or later (the pinned module is 1.31-dev).
    ["1.31.0", "Istio 1.31.0, Envoy 1.38 or later"],
    ["1.100.0", "Istio 1.100.0, Envoy 1.38 or later"],
    // Older than the table: older than its oldest Envoy.
    ["1.24.3", "Istio 1.24.3, Envoy 1.32 or older"],
    ["1.9.0", "Istio 1.9.0, Envoy 1.32 or older"],
    // Nothing said: empty, not a version, not Istio 1 (adsc's 65536.65536.65536), a digit run
    // that is not 1.2 followed by more (1.2x is not 1.2).
    ["", undefined],
    ["latest", undefined],
    ["v1.26.0", undefined],
    ["65536.65536.65536", undefined],
    ["2.0.0", undefined],
    ["1.12345", undefined],
  ];
  for (const [v, text] of cases) {
    const e = envoyOfIstio(v);
    assert.equal(e && proxyEnvoyText(e), text, v);
  }
});

Deno.test("per-client buckets are refused only by an Envoy known to be older than 1.34", () => {
  assert.equal(DYNAMIC_DESCRIPTORS_MINOR, 34);
  const refuses = (v: string) => refusesPerClient(envoyOfIstio(v));
  assert.equal(refuses("1.25.9"), true);
  assert.equal(refuses("1.20.0"), true, "below the table: at most 1.32");
  assert.equal(refuses("1.26.0"), false);
  assert.equal(refuses("1.31.0"), false, "above the table: at least 1.38");
  assert.equal(refuses(""), false, "unknown: not assumed");
  assert.equal(refusesPerClient(undefined), false);
});

/** The rows of docs/ratelimit.md's version table, as cells. */
async function docsTable(): Promise<string[][]> {
  const page = await Deno.readTextFile(new URL("../../docs/ratelimit.md", import.meta.url));
  const section = page.split("\n## Which Istio gets what\n")[1]?.split("\n## ")[0] ?? "";
  return section.split("\n")
    .filter((l) => l.startsWith("|") && !l.startsWith("| -") && !l.startsWith("| Istio"))
    .map((l) => l.split("|").slice(1, -1).map((c) => c.trim()));
}

Deno.test("docs/ratelimit.md's version table is the data: each Istio's Envoy and per-client", async () => {
  const rows = await docsTable();
  const listed = rows.filter((r) => /^1\.\d+$/.test(r[0]));
  assert.deepEqual(
    listed.map((r) => [r[0], r[1]]),
    [...ISTIO_ENVOY_ROWS].reverse().map((r) => [r.istio, r.envoy]),
  );
  for (const r of rows) {
    // Each row's per-client column says what the operator does with a proxy of that Istio (or,
    // for a row without one, of that Envoy).
    const e = r[0] !== ""
      ? envoyOfIstio(r[0].split(" ")[0])
      : { istio: "", minor: minor(r[1]), bound: "exact" as const };
    assert.ok(e, r[0]);
    assert.equal(r[1], proxyEnvoyText(e).split("Envoy ")[1], `row ${r[0]}: its Envoy`);
    assert.equal(r[4], refusesPerClient(e) ? "refused" : "applied", `row ${r[0]}`);
  }
  assert.ok(rows.some((r) => r[4] === "refused") && rows.some((r) => r[4] === "applied"));
});
