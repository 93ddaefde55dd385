/** Status messages cut to the CRDs' limit with a count of what was left out (src/api/message.ts). */
import assert from "node:assert/strict";
import fc from "fast-check";
import { CONDITION_MESSAGE_MAX, fitMessage, fitText, joinWithin } from "../../src/api/message.ts";
import { PLANS } from "../../src/api/validation/plans.ts";
import type { ValidationPlan } from "../../src/api/validation/plan.ts";

Deno.test("the limit is the CRDs' maxLength on a Condition's message", () => {
  const message = (PLANS.Condition as Extract<ValidationPlan, { type: "object" }>).shape.message;
  assert.deepEqual(message, {
    type: "string",
    checks: [{ check: "max", n: CONDITION_MESSAGE_MAX }],
  });
  assert.equal(CONDITION_MESSAGE_MAX, 32768);
});

Deno.test("joinWithin: all items when they fit, else whole items and a count of the rest", () => {
  assert.equal(joinWithin(["a", "b", "c"], 7), "a; b; c");
  const [a, b, c] = ["a".repeat(10), "b".repeat(10), "c".repeat(30)];
  assert.equal(joinWithin([a, b, c], 54), `${a}; ${b}; ${c}`);
  assert.equal(joinWithin([a, b, c], 53), `${a}; ${b}; and 1 more problems`);
  assert.equal(joinWithin([a, b, c], 42), `${a}; and 2 more problems`);
  const labels = Array.from({ length: 10 }, (_, i) => `k${i}=v`);
  assert.equal(
    joinWithin(labels, 40, { separator: ",", noun: "labels" }),
    "k0=v,k1=v,k2=v,k3=v and 6 more labels",
  );
  // Not even the first fits whole: it is cut, and the rest counted.
  assert.equal(joinWithin(["x".repeat(50), "y"], 40), `${"x".repeat(16)}...; and 1 more problems`);
  assert.equal(joinWithin(["x".repeat(50)], 10), `${"x".repeat(7)}...`);
  assert.equal(joinWithin(["x", "y", "z"], 3), "3 p");
  assert.equal(joinWithin([], 0), "");
});

Deno.test("joinWithin never splits a surrogate pair", () => {
  const out = joinWithin(["🙂".repeat(20)], 12);
  assert.equal(out, `${"🙂".repeat(4)}...`);
  assert.ok(out.isWellFormed());
});

Deno.test("joinWithin: any items within any room fit, and what is shown plus the count is all", () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: "grapheme", maxLength: 30 }), { maxLength: 40 }),
      fc.integer({ min: 0, max: 400 }),
      (items, max) => {
        const out = joinWithin(items, max);
        assert.ok(out.length <= max, `${out.length} > ${max}`);
        assert.ok(out.isWellFormed());
        const all = items.join("; ");
        if (all.length <= max) return assert.equal(out, all);
        const count = /(?:^|; )and (\d+) more problems$/.exec(out);
        if (!count) return;
        const shown = out.slice(0, count.index);
        const n = items.length - Number(count[1]);
        if (shown === items.slice(0, n).join("; ")) return;
        // Else the first item was cut: it is all that is shown, up to "...".
        assert.equal(n, 1);
        assert.ok(shown.endsWith("...") && items[0].startsWith(shown.slice(0, -3)), shown);
      },
    ),
    { seed: 24, numRuns: 2000 },
  );
});

Deno.test("fitMessage gives the list the room head and tail leave; fitText counts characters", () => {
  const items = Array.from({ length: 300 }, (_, i) => `spec.x[${i}]: ${"bad ".repeat(50)}`);
  const out = fitMessage("Invalid spec: ", items, "; generation 1 still enforced");
  assert.ok(out.length <= CONDITION_MESSAGE_MAX);
  assert.ok(out.length > CONDITION_MESSAGE_MAX - 250, String(out.length));
  assert.match(out, /^Invalid spec: spec\.x\[0\]: bad /);
  assert.match(out, /; and \d+ more problems; generation 1 still enforced$/);
  assert.equal(fitMessage("a: ", ["b", "c"], "."), "a: b; c.");
  const long = "y".repeat(CONDITION_MESSAGE_MAX + 10);
  const cut = fitText(long);
  // The count's digits are reserved for the longest count, so a few characters may stay unused.
  assert.ok(cut.length <= CONDITION_MESSAGE_MAX && cut.length > CONDITION_MESSAGE_MAX - 5);
  const left = Number(/\.\.\. and (\d+) more characters$/.exec(cut)![1]);
  assert.equal(cut.indexOf("..."), long.length - left);
  assert.equal(fitText("short"), "short");
  // A head longer than the limit: the whole message is cut the same way.
  assert.equal(
    fitMessage("h".repeat(50), ["x"], "", 40),
    `${"h".repeat(14)}... and 37 more characters`,
  );
});
