/** Quantities in the API server's canonical form (apimachinery resource.Quantity). */
import assert from "node:assert/strict";
import fc from "fast-check";
import { canonicalQuantity, compareQuantities, parseQuantity } from "../../src/api/quantity.ts";
import { QUANTITY_PATTERN } from "../../src/api/schema/scaler.ts";

// Expected forms follow apimachinery's Quantity.String() (pkg/api/resource/quantity_test.go): inputs already canonical are kept as
// written; others are canonicalized (largest suffix with an integer mantissa; binary suffixes only
// for whole values of 1024 or more).
const CASES: [string, string][] = [
  ["0", "0"],
  ["0m", "0"],
  ["0Mi", "0"],
  ["1", "1"],
  ["1000m", "1"],
  ["100m", "100m"],
  ["0.5", "500m"],
  ["1.5", "1500m"],
  ["1.1", "1100m"],
  ["1000", "1k"],
  ["1024", "1024"],
  ["128974848", "128974848"],
  ["129e6", "129e6"],
  ["10e2", "1e3"],
  ["1M", "1M"],
  ["1000k", "1M"],
  ["1Ki", "1Ki"],
  ["100Mi", "100Mi"],
  ["1000Mi", "1000Mi"],
  ["1024Mi", "1Gi"],
  ["2048Ki", "2Mi"],
  ["1.5Gi", "1536Mi"],
  ["0.5Ki", "512"],
  ["5.5Ki", "5632"],
  ["0.0000000001", "1n"],
  ["1.0000000001", "1000000001n"],
  ["0100m", "0100m"],
  ["-100m", "-100m"],
  ["-1000m", "-1"],
  // BinarySI is capped at 2^63-1, as apimachinery does.
  ["10Ei", "9223372036854775807"],
  ["9Ei", "9223372036854775807"],
  // From apimachinery's TestQuantityParseEmit and TestQuantityString.
  [".001Ki", "1024m"],
  [".000000000001Ki", "2n"],
  ["1000M", "1G"],
  ["307200Ki", "300Mi"],
  ["1.08", "1080m"],
  ["1080000000n", "1080m"],
  ["80e-3", "80e-3"],
  ["0.001e0", "1e-3"],
  ["1025", "1025"],
  ["3.001n", "4n"],
];

Deno.test("canonicalQuantity matches the API server on known inputs", () => {
  for (const [input, want] of CASES) assert.equal(canonicalQuantity(input), want, input);
});

Deno.test("canonicalQuantity rejects what is not a quantity or out of range", () => {
  for (
    const bad of [
      "",
      "abc",
      "1K",
      "1.2.3",
      "1e",
      "Mi",
      "1 Mi",
      "99999999999999999999",
      "1e30",
    ]
  ) {
    assert.equal(canonicalQuantity(bad), undefined, bad);
  }
});

const arbQuantity = fc.tuple(
  fc.constantFrom("", "-"),
  fc.nat(200000),
  fc.option(fc.stringMatching(/^[0-9]{1,4}$/), { nil: undefined }),
  fc.constantFrom("", "n", "u", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e3", "e-3", "E2"),
).map(([s, n, frac, suffix]) => `${s}${n}${frac !== undefined ? `.${frac}` : ""}${suffix}`);

Deno.test("canonical form is a fixpoint, keeps the value, and is a valid quantity (property)", () => {
  const pattern = new RegExp(QUANTITY_PATTERN);
  fc.assert(
    fc.property(arbQuantity, (text) => {
      const c = canonicalQuantity(text);
      if (c === undefined) return;
      assert.match(c, pattern);
      assert.equal(canonicalQuantity(c), c, `${text} → ${c} is not stable`);
      const a = parseQuantity(text)!;
      const b = parseQuantity(c)!;
      assert.equal(compareQuantities(a, b), 0, `${text} and ${c} differ in value`);
    }),
    { seed: 42, numRuns: 2000 },
  );
});

Deno.test("compareQuantities orders by value across suffixes", () => {
  const q = (s: string) => parseQuantity(s)!;
  assert.equal(compareQuantities(q("1Gi"), q("1000Mi")), 1);
  assert.equal(compareQuantities(q("100m"), q("0.1")), 0);
  assert.equal(compareQuantities(q("1k"), q("1Ki")), -1);
});
