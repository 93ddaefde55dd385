/**
 * A validation plan: a kind's schema as plain data, so the operator validates objects without
 * loading the schema library (docs/architecture.md "Validation at run time"). Plans are generated
 * from the zod schemas by `deno task crds` (from_zod.ts) and checked against zod by property tests.
 */

/**
 * A message written in a schema. `{input}` stands for the offending value as JSON, the way the
 * schema's own message function writes it.
 */
export type Message = string;

/** A check on a value that has the right type. */
export type Check =
  /** Strings: at least `n` characters (code points); numbers: at least `n`. */
  | { check: "min"; n: number; abort?: true }
  /** Strings: at most `n` characters (code points); numbers: at most `n`. */
  | { check: "max"; n: number; abort?: true }
  /** Strings: match `source` (a RegExp source, no flags). */
  | { check: "regex"; source: string; message?: Message }
  /** Maps: at least `n` entries; the schema's refinement, stated in the CRD as minProperties. */
  | { check: "minProperties"; n: number; message: Message }
  /** Maps: at most `n` entries; the schema's refinement, stated in the CRD as maxProperties. */
  | { check: "maxProperties"; n: number; message: Message }
  /** Maps: keys of at most `n` characters; stated in the CRD as `self.all(k, size(k) <= n)`. */
  | { check: "maxKeyLength"; n: number; message: Message }
  /** Objects: at least one of `fields` set; stated in the CRD as `has(self.a) || has(self.b)`. */
  | { check: "anyOf"; fields: string[]; message: Message }
  /** Objects: not both of `fields` set; stated in the CRD as `!has(self.a) || !has(self.b)`. */
  | { check: "notBoth"; fields: [string, string]; message: Message }
  /** Lists: no item twice (compared as `Set` does); stated in the CRD as a list of type set. */
  | { check: "unique"; message: Message }
  /**
   * Lists of strings: their lengths (characters, as CEL's size counts them) add up to at most n;
   * stated in the CRD as `self.map(x, size(x)).sum() <= n`.
   */
  | { check: "maxTotalLength"; n: number; message: Message }
  /**
   * Objects: the entries of the maps `fields` (absent ones count 0) add up to at most n; stated in
   * the CRD as `(has(self.a) ? size(self.a) : 0) + (has(self.b) ? size(self.b) : 0) <= n`.
   */
  | { check: "maxEntriesTogether"; fields: string[]; n: number; message: Message };

/** One node of a plan. */
export type ValidationPlan =
  | { type: "string"; checks?: Check[] }
  /** A safe integer; `typeMessage` replaces the type error's message (see `integer()`). */
  | { type: "int"; checks?: Check[]; typeMessage?: Message }
  | { type: "boolean" }
  /** One of `values` (an enum, or a literal when there is one value). */
  | { type: "enum"; values: (string | number | boolean)[] }
  /** Fields of `shape`; unknown fields are dropped (`strip`) or kept as they are (`keep`). */
  | {
    type: "object";
    shape: Record<string, ValidationPlan>;
    unknown: "strip" | "keep";
    checks?: Check[];
  }
  /** A map of string keys to values of `value`. */
  | { type: "record"; value: ValidationPlan; checks?: Check[] }
  | { type: "array"; item: ValidationPlan; checks?: Check[] }
  /** May be absent. */
  | { type: "optional"; inner: ValidationPlan }
  /** Absent: `value` is the result as it is (not validated). */
  | { type: "default"; inner: ValidationPlan; value: unknown }
  /** Absent: `value` is validated in its place, so the inner defaults fill it. */
  | { type: "prefault"; inner: ValidationPlan; value: unknown };
