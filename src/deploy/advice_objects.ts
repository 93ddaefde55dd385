/**
 * deploy/ratelimit/advice.yaml: the API server gives the preview's advice on RateLimit rules
 * (src/api/ratelimit_advice.ts) as warnings when a RateLimit is created or updated, so that a rule
 * applied with `kubectl apply` or by a GitOps tool says what the preview would have said:
 * `Warning: ... spec.local.buckets[0].headers names Host, which the proxy compares exactly: ...`.
 *
 * A ValidatingAdmissionPolicy (CEL in the API server, nothing of the operator's) bound with the
 * action Warn: it never refuses a write, and `failurePolicy: Ignore` lets a write through if a
 * check cannot be evaluated. One check a rule index (the lists are bounded: 8 local buckets, 8
 * global rules) and kind of advice (Host named as a header or key, a hop-by-hop header), each with the message `ruleAdviceAt` gives that rule, so the
 * warnings are the preview's lines, word for word and in the same order.
 */
import type { KubeObject } from "../api/object.ts";
import {
  ADVISED_RULE_LISTS,
  hopByHopHeaderAdvice,
  hopByHopKeyAdvice,
  hostHeaderAdvice,
  hostKeyAdvice,
} from "../api/ratelimit_advice.ts";
import { HOP_BY_HOP_HEADERS } from "../api/envoy.ts";
import { RESOURCES } from "../api/resources.ts";
import { admissionPolicy, matchingType } from "./admission_policy.ts";

/** The name of the advice's ValidatingAdmissionPolicy and of its binding. */
export const ADVICE_NAME = "platform-operator-ratelimit-advice";

const HOP_BY_HOP_CEL = `[${HOP_BY_HOP_HEADERS.map((h) => `'${h}'`).join(", ")}]`;

/**
 * Each kind of advice: the CEL condition on rule `r` under which it applies (ratelimit_advice.ts's
 * predicates, in CEL), and its message, in `ruleAdviceAt`'s order.
 */
const ADVICE: readonly { when: (r: string) => string; message: (at: string) => string }[] = [
  {
    when: (r) => `has(${r}.headers) && ${r}.headers.exists(k, k.lowerAscii() == 'host')`,
    message: hostHeaderAdvice,
  },
  {
    when: (r) =>
      `has(${r}.perClient) && has(${r}.perClient.header) && ` +
      `${r}.perClient.header.lowerAscii() == 'host'`,
    message: hostKeyAdvice,
  },
  {
    when: (r) => `has(${r}.headers) && ${r}.headers.exists(k, k.lowerAscii() in ${HOP_BY_HOP_CEL})`,
    message: hopByHopHeaderAdvice,
  },
  {
    when: (r) =>
      `has(${r}.perClient) && has(${r}.perClient.header) && ` +
      `${r}.perClient.header.lowerAscii() in ${HOP_BY_HOP_CEL}`,
    message: hopByHopKeyAdvice,
  },
];

/** The CEL validations: for each list, each index, each kind of advice, in the preview's order. */
export function adviceValidations(): { expression: string; message: string }[] {
  return ADVISED_RULE_LISTS.flatMap(({ field, max }) => {
    const path = `object.${field}`;
    // has() for each field on the way down: object.spec, object.spec.local, ...
    const parts = field.split(".");
    const present = parts.map((_, i) => `has(object.${parts.slice(0, i + 1).join(".")})`);
    return Array.from({ length: max }, (_, i) =>
      ADVICE.map(({ when, message }) => ({
        expression: `!(${present.join(" && ")} && size(${path}) > ${i} && ${
          when(`${path}[${i}]`)
        })`,
        message: message(`${field}[${i}]`),
      }))).flat();
  });
}

/** The advice's policy and its binding (action Warn). */
export function adviceObjects(): KubeObject[] {
  return admissionPolicy(ADVICE_NAME, {
    failurePolicy: "Ignore",
    matchConstraints: matchingType(RESOURCES.RateLimit, ["CREATE", "UPDATE"]),
    validations: adviceValidations(),
  }, { validationActions: ["Warn"] });
}
