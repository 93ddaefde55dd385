/**
 * One selector grammar, Kubernetes' own: the operator's cache (src/api/selector.ts) and the
 * simulated API server (sim/cluster/selector.ts) accept and refuse the same table of selectors,
 * and match the same labels.
 */
import assert from "node:assert/strict";
import { isLabelValue, isQualifiedName, parseSelector } from "../../src/api/selector.ts";
import { selectorOf as simParse } from "../../sim/cluster/selector.ts";

/** [selector, valid] — keys and values by apimachinery's IsQualifiedName and IsValidLabelValue. */
const TABLE: [string, boolean][] = [
  ["app=web", true],
  ["app==web,tier!=db", true],
  ["app.kubernetes.io/name=web", true],
  ["example.com/My_Key-1.x=v", true],
  ["app in (web, api),!legacy,track", true],
  ["app notin ()", true],
  ["app=", true],
  ["a/b/c=x", false], // two slashes
  ["Example.com/key=x", false], // a prefix is a lowercase DNS subdomain
  ["-app=x", false], // a name starts alphanumeric
  ["app-=x", false], // and ends alphanumeric
  [`${"k".repeat(64)}=x`, false], // a name has at most 63 characters
  [`${"p".repeat(254)}/k=x`, false], // a prefix at most 253
  [`app=${"v".repeat(64)}`, false], // a value at most 63
  ["app=-x", false],
  ["app in (a b)", false],
  ["app=web,", false], // an empty requirement
  [",app=web", false],
  ["app web", false],
];

for (const [selector, valid] of TABLE) {
  Deno.test(`selector ${JSON.stringify(selector.slice(0, 40))}: ${valid ? "valid" : "refused"} in both`, () => {
    assert.equal(parseSelector(selector) !== undefined, valid, "the operator's cache");
    let sim = true;
    try {
      simParse(selector);
    } catch {
      sim = false;
    }
    assert.equal(sim, valid, "the simulated API server");
  });
}

Deno.test("both match the same labels", () => {
  const labels: Record<string, string>[] = [{}, { app: "web" }, { app: "api", track: "" }, {
    app: "web",
    legacy: "1",
  }];
  for (const selector of ["app in (web, api),!legacy", "app!=web", "track", "app=web,legacy"]) {
    const ours = parseSelector(selector)!;
    const sims = simParse(selector);
    for (const l of labels) assert.equal(ours(l), sims(l), `${selector} on ${JSON.stringify(l)}`);
  }
  assert.ok(parseSelector(undefined)!({}) && parseSelector(" ")!({ a: "b" }), "empty selects all");
});

Deno.test("label keys and values: the grammar's edges", () => {
  assert.ok(isQualifiedName(`${"a".repeat(253)}/${"b".repeat(63)}`));
  assert.ok(!isQualifiedName("/name"));
  assert.ok(isLabelValue("") && isLabelValue("a.b_c-d"));
  assert.ok(!isLabelValue("a b"));
});
