/**
 * Label selectors as the simulated API server reads them: Kubernetes' grammar (src/api/selector.ts,
 * the parser the operator's cache uses too), and a malformed one is a 400 as on a real server.
 */
import { parseSelector as parse, selects } from "../../src/api/selector.ts";
import { badRequest } from "./errors.ts";

/** A parsed selector: a predicate on a label map. */
export type Selector = (labels: Readonly<Record<string, string>> | undefined) => boolean;

/** Parses a selector string (400 BadRequest when malformed); empty or undefined selects all. */
export function selectorOf(text: string | undefined): Selector {
  const matcher = parse(text);
  if (!matcher) throw badRequest(`unable to parse requirement: ${JSON.stringify(text)}`);
  return (labels) => matcher(labels ?? {});
}

/** True when every key/value of `wanted` is in `labels` (a map selector such as matchLabels). */
export function matchesLabels(
  wanted: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  return selects(wanted, labels ?? {});
}
