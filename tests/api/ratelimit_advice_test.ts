/**
 * The advice on RateLimit rules (src/api/ratelimit_advice.ts) and the admission policy made of it
 * (src/deploy/advice_objects.ts). That the policy's CEL warns exactly where `ruleAdvice` advises is
 * checked on a real API server (tests/e2e/advice.ts); here, what each says.
 */
import assert from "node:assert/strict";
import type { RateLimit, RuleMatch } from "../../src/api/ratelimit.ts";
import {
  ADVISED_RULE_LISTS,
  hopByHopHeaderAdvice,
  hopByHopKeyAdvice,
  hostHeaderAdvice,
  hostKeyAdvice,
  ruleAdvice,
  ruleAdviceAt,
} from "../../src/api/ratelimit_advice.ts";
import { adviceObjects, adviceValidations } from "../../src/deploy/advice_objects.ts";
import { MAX_BUCKET_RULES, MAX_GLOBAL_RULES } from "../../src/api/ratelimit_bounds.ts";

const at = "spec.local.buckets[3]";

Deno.test("advice: Host named as a header or a key, in any case; nothing for names that only contain it", () => {
  assert.deepEqual(ruleAdviceAt({ headers: { HOST: "a" } } as RuleMatch, at), [
    hostHeaderAdvice(at),
  ]);
  assert.deepEqual(ruleAdviceAt({ perClient: { header: "Host" } } as RuleMatch, at), [
    hostKeyAdvice(at),
  ]);
  for (const name of ["x-host", "hostname", "host-id", ":authority-x", "keep-alive-x"]) {
    assert.deepEqual(ruleAdviceAt({ headers: { [name]: "a" } } as RuleMatch, at), [], name);
    assert.deepEqual(ruleAdviceAt({ perClient: { header: name } } as RuleMatch, at), [], name);
  }
});

Deno.test("advice: a hop-by-hop header in headers or as the key; every kind of one rule, in order", () => {
  const rule = {
    headers: { "Transfer-Encoding": "chunked", host: "a.example.com" },
    perClient: { header: "Keep-Alive" },
  } as RuleMatch;
  assert.deepEqual(ruleAdviceAt(rule, at), [
    hostHeaderAdvice(at),
    hopByHopHeaderAdvice(at),
    hopByHopKeyAdvice(at),
  ]);
  assert.match(hopByHopHeaderAdvice(at), /\(keep-alive, proxy-connection or transfer-encoding\)/);
});

Deno.test("advice: local buckets first, then global rules, each named by its place", () => {
  const rl = {
    spec: {
      local: { buckets: [{}, { headers: { host: "a" } }] },
      global: { rules: [{ perClient: { header: "host" } }] },
    },
  } as unknown as RateLimit;
  assert.deepEqual(ruleAdvice(rl), [
    hostHeaderAdvice("spec.local.buckets[1]"),
    hostKeyAdvice("spec.global.rules[0]"),
  ]);
});

Deno.test("the advice policy: a check for each place and kind, with ruleAdviceAt's words, in its order", () => {
  const validations = adviceValidations();
  assert.equal(ADVISED_RULE_LISTS.length, 2);
  assert.equal(validations.length, 4 * (MAX_BUCKET_RULES + MAX_GLOBAL_RULES));
  // A rule with every kind of advice gives, at each place, the messages of that place's checks.
  const every = {
    headers: { host: "a", "keep-alive": "b" },
    perClient: { header: "host" },
  } as RuleMatch;
  const everyKey = { perClient: { header: "proxy-connection" } } as RuleMatch;
  let i = 0;
  for (const { field, max } of ADVISED_RULE_LISTS) {
    for (let n = 0; n < max; n++) {
      const place = `${field}[${n}]`;
      const messages = validations.slice(i, i + 4).map((v) => v.message);
      assert.deepEqual(
        [...ruleAdviceAt(every, place), ...ruleAdviceAt(everyKey, place)],
        messages,
        place,
      );
      for (const v of validations.slice(i, i + 4)) {
        assert.ok(v.expression.includes(`object.${place}`), `${place}: ${v.expression}`);
      }
      i += 4;
    }
  }
  const [policy, binding] = adviceObjects();
  assert.deepEqual((binding.spec as { validationActions: string[] }).validationActions, ["Warn"]);
  assert.equal((policy.spec as { failurePolicy: string }).failurePolicy, "Ignore");
});
