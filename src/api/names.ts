/**
 * The API server's name rules (apimachinery's validation): a DNS-1123 subdomain, what most
 * objects' names must be, and a DNS-1123 label, a namespace's. No dependencies: the CLI's flags
 * and the YAML reader use the same rules.
 */

/** A name rule of the API server: its pattern, its longest, and the words it refuses with. */
export interface NameRule {
  pattern: RegExp;
  max: number;
  rule: string;
}

/** A DNS-1123 subdomain: what the API server takes as most objects' names, custom ones too. */
export const DNS_SUBDOMAIN: NameRule = {
  pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
  max: 253,
  rule: "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, " +
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')",
};

/** A DNS-1123 label: what the API server takes as a namespace's name. */
export const DNS_LABEL: NameRule = {
  pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
  max: 63,
  rule: "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', " +
    "and must start and end with an alphanumeric character (e.g. 'my-name')",
};

/** True when `value` is a name `rule` takes. */
export function followsRule(value: string, rule: NameRule): boolean {
  return value.length <= rule.max && rule.pattern.test(value);
}
