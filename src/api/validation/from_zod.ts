/**
 * From a zod schema to its validation plan. Like the CRD generator it fails loudly on anything it
 * cannot express, so a schema change never yields a plan that silently validates differently.
 * Runs when plans are generated and in tests; the operator never loads it (or zod).
 */
import { z } from "zod";
import type { Check, Message, ValidationPlan } from "./plan.ts";

type Def = { type: string; [key: string]: unknown };
type Node = z.core.$ZodType;

function defOf(schema: Node): Def {
  return schema._zod.def as unknown as Def;
}

function fail(path: string, what: string): never {
  throw new Error(`validation plan at ${path || "(root)"}: ${what}`);
}

/** A stand-in input: a message function's output with it in place of the input becomes a template. */
const SENTINEL = "\u0000input\u0000";

/** The message a schema's `error` option writes for an issue, as a template; undefined for none. */
function messageOf(
  error: unknown,
  issue: Record<string, unknown>,
  path: string,
): Message | undefined {
  if (error === undefined) return undefined;
  if (typeof error === "string") return error;
  if (typeof error !== "function") {
    fail(path, "an error option that is neither text nor a function");
  }
  const out = error({ ...issue, input: SENTINEL });
  const text = typeof out === "string" ? out : (out as { message?: unknown } | undefined)?.message;
  if (text === undefined) return undefined;
  if (typeof text !== "string") fail(path, "an error function that returns no text");
  const quoted = JSON.stringify(SENTINEL);
  if (text.replaceAll(quoted, "").includes(SENTINEL)) {
    fail(path, "an error message that shows the input other than as JSON");
  }
  return text.replaceAll(quoted, "{input}");
}

function checkDefs(def: Def): Def[] {
  const checks = (def.checks ?? []) as Node[];
  return checks.map((c) => defOf(c));
}

/** The length (or, for numbers, value) checks of a node: min, max and regex. */
function plainChecks(def: Def, path: string, numeric: boolean): Check[] {
  const out: Check[] = [];
  for (const c of checkDefs(def)) {
    // Refinements are read by `refinements`, after these (a list's, so far, come last).
    if (c.check === "custom") continue;
    const abort = c.abort === true ? { abort: true as const } : {};
    if (c.error !== undefined && c.check !== "string_format") {
      fail(path, `${c.check} with a message`);
    }
    if (!numeric && c.check === "min_length") {
      out.push({ check: "min", n: Number(c.minimum), ...abort });
    } else if (!numeric && c.check === "max_length") {
      out.push({ check: "max", n: Number(c.maximum), ...abort });
    } else if (numeric && c.check === "greater_than" && c.inclusive === true) {
      out.push({ check: "min", n: Number(c.value), ...abort });
    } else if (numeric && c.check === "less_than" && c.inclusive === true) {
      out.push({ check: "max", n: Number(c.value), ...abort });
    } else if (!numeric && c.check === "string_format" && c.format === "regex") {
      const pattern = c.pattern as RegExp;
      if (pattern.flags !== "") fail(path, `a pattern with flags /${pattern.flags}`);
      if (c.abort === true) fail(path, "a pattern that aborts");
      const message = messageOf(c.error, { code: "invalid_format", format: "regex" }, path);
      out.push({
        check: "regex",
        source: pattern.source,
        ...(message === undefined ? {} : { message }),
      });
    } else fail(path, `the check ${String(c.check)} (${String(c.format ?? "")})`);
  }
  return out;
}

const HAS_ANY =
  /^has\(self\.([A-Za-z_][A-Za-z0-9_]*)\)( \|\| has\(self\.([A-Za-z_][A-Za-z0-9_]*)\))*$/;
const KEYS_AT_MOST = /^self\.all\(k, size\(k\) <= ([1-9][0-9]*)\)$/;
const TOTAL_AT_MOST = /^self\.map\(x, size\(x\)\)\.sum\(\) <= ([1-9][0-9]*)$/;
const SIZE_TERM = /^\(has\(self\.([A-Za-z_][A-Za-z0-9_]*)\) \? size\(self\.\1\) : 0\)$/;
const SUM_AT_MOST = /^(.+) <= ([1-9][0-9]*)$/;
const NOT_BOTH =
  /^!has\(self\.([A-Za-z_][A-Za-z0-9_]*)\) \|\| !has\(self\.([A-Za-z_][A-Za-z0-9_]*)\)$/;

/** The check a CEL rule of the schema states, for the forms a plan can hold. */
function celCheck(rule: string, path: string): (message: Message) => Check {
  const keys = KEYS_AT_MOST.exec(rule);
  if (keys) {
    const n = Number(keys[1]);
    return (message) => ({ check: "maxKeyLength", n, message });
  }
  const total = TOTAL_AT_MOST.exec(rule);
  if (total) {
    const n = Number(total[1]);
    return (message) => ({ check: "maxTotalLength", n, message });
  }
  const sum = SUM_AT_MOST.exec(rule);
  const terms = sum?.[1].split(" + ").map((t) => SIZE_TERM.exec(t));
  if (sum && terms && terms.length > 1 && terms.every((t) => t !== null)) {
    const fields = terms.map((t) => t![1]);
    const n = Number(sum[2]);
    return (message) => ({ check: "maxEntriesTogether", fields, n, message });
  }
  const both = NOT_BOTH.exec(rule);
  if (both) {
    const fields: [string, string] = [both[1], both[2]];
    return (message) => ({ check: "notBoth", fields, message });
  }
  if (!HAS_ANY.test(rule)) fail(path, `the CEL rule ${JSON.stringify(rule)}`);
  const fields = [...rule.matchAll(/has\(self\.([A-Za-z0-9_]+)\)/g)].map((m) => m[1]);
  return (message) => ({ check: "anyOf", fields, message });
}

/**
 * The refinements of a node, read from what the schema states for the CRD (its metadata), in this
 * order: a list's `x-kubernetes-list-type: set` (no item twice), a map's `minProperties`, its
 * `maxProperties`, then CEL rules (`has(self.a) || has(self.b)`, `!has(self.a) || !has(self.b)`,
 * `self.all(k, size(k) <= n)`, `self.map(x, size(x)).sum() <= n`,
 * `(has(self.a) ? size(self.a) : 0) + (has(self.b) ? size(self.b) : 0) <= n`). The refinement's function
 * cannot be read; the property tests hold it and the plan to the same answers.
 */
function refinements(schema: Node, def: Def, path: string): Check[] {
  const refines = checkDefs(def).filter((c) => c.check === "custom");
  if (refines.length === 0) return [];
  const meta = (z.globalRegistry.get(schema) ?? {}) as Record<string, unknown>;
  const stated: ((message: Message) => Check)[] = [];
  if (meta["x-kubernetes-list-type"] === "set") {
    stated.push((message) => ({ check: "unique", message }));
  }
  for (const bound of ["minProperties", "maxProperties"] as const) {
    const n = meta[bound];
    if (typeof n === "number") stated.push((message) => ({ check: bound, n, message }));
  }
  for (const v of (meta["x-kubernetes-validations"] ?? []) as { rule: string }[]) {
    stated.push(celCheck(v.rule, path));
  }
  if (stated.length !== refines.length) {
    fail(path, `${refines.length} refinement(s) but ${stated.length} stated for the CRD`);
  }
  return refines.map((r, i) => {
    if (r.abort === true || r.when !== undefined || r.path !== undefined) {
      fail(path, "a refinement with abort, when or path");
    }
    const message = messageOf(r.error, { code: "custom" }, path);
    if (message === undefined) fail(path, "a refinement without a message");
    return stated[i](message);
  });
}

function withChecks<P extends ValidationPlan>(plan: P, checks: Check[]): P {
  return checks.length ? { ...plan, checks } : plan;
}

const WRAPPERS = new Set(["optional", "default", "prefault"]);

/** The plan of a zod schema; throws on what a plan cannot express. */
export function planOf(schema: Node, path = ""): ValidationPlan {
  const def = defOf(schema);
  if (def.error !== undefined && def.type !== "number") fail(path, `a ${def.type} with a message`);
  const noChecks = () => {
    if (checkDefs(def).length) fail(path, `checks on a ${def.type}`);
  };
  switch (def.type) {
    case "string":
      return withChecks({ type: "string" }, plainChecks(def, path, false));
    case "number": {
      if (def.check !== "number_format" || def.format !== "safeint") {
        fail(path, "a number that is not z.int()");
      }
      const typeMessage = messageOf(def.error, { code: "invalid_type", expected: "number" }, path);
      return withChecks(
        { type: "int", ...(typeMessage === undefined ? {} : { typeMessage }) },
        plainChecks(def, path, true),
      );
    }
    case "boolean":
      noChecks();
      return { type: "boolean" };
    case "enum":
      noChecks();
      return { type: "enum", values: Object.values(def.entries as Record<string, string>) };
    case "literal":
      noChecks();
      return { type: "enum", values: [...(def.values as (string | number | boolean)[])] };
    case "object": {
      const catchall = def.catchall === undefined ? undefined : defOf(def.catchall as Node).type;
      if (catchall !== undefined && catchall !== "unknown") fail(path, `a ${catchall} catch-all`);
      const shape = def.shape as Record<string, Node>;
      return withChecks({
        type: "object",
        shape: Object.fromEntries(
          Object.entries(shape).map(([k, v]) => [k, planOf(v, path ? `${path}.${k}` : k)]),
        ),
        unknown: catchall === "unknown" ? "keep" : "strip",
      }, refinements(schema, def, path));
    }
    case "record": {
      const key = defOf(def.keyType as Node);
      if (key.type !== "string" || checkDefs(key).length) {
        fail(path, "a record key other than z.string()");
      }
      return withChecks(
        { type: "record", value: planOf(def.valueType as Node, `${path}.*`) },
        refinements(schema, def, path),
      );
    }
    case "array": {
      const checks = checkDefs(def);
      const firstRefine = checks.findIndex((c) => c.check === "custom");
      if (firstRefine >= 0 && checks.slice(firstRefine).some((c) => c.check !== "custom")) {
        fail(path, "a list check after a refinement");
      }
      return withChecks(
        { type: "array", item: planOf(def.element as Node, `${path}[]`) },
        [...plainChecks(def, path, false), ...refinements(schema, def, path)],
      );
    }
    case "optional":
    case "default":
    case "prefault": {
      noChecks();
      const inner = def.innerType as Node;
      if (WRAPPERS.has(defOf(inner).type)) fail(path, `${def.type} around ${defOf(inner).type}`);
      const plan = planOf(inner, path);
      if (def.type === "optional") return { type: "optional", inner: plan };
      // JSON round trip: a default must be data, and the plan holds a copy of it.
      const value = JSON.parse(JSON.stringify(def.defaultValue));
      return { type: def.type, inner: plan, value };
    }
    default:
      fail(path, `the type ${def.type}`);
  }
}
