/**
 * The one reader of what users hand the CLI (src/api/yaml.ts): YAML as kubectl reads it, UTF-8
 * only, bounded in size, aliases, nesting and values, with one line naming where it refused.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  decodeUtf8,
  firstInvalidUtf8,
  flattenLists,
  MAX_DEPTH,
  MAX_INPUT_BYTES,
  objectMetaProblems,
  parseYamlDocument,
  parseYamlDocuments,
} from "../../src/api/yaml.ts";

function values(text: string): unknown[] {
  const r = parseYamlDocuments(text, "f.yaml");
  assert.ok(r.ok, r.ok ? "" : r.error);
  return r.value;
}

function refusal(text: string): string {
  const r = parseYamlDocuments(text, "f.yaml");
  assert.ok(!r.ok, `accepted: ${JSON.stringify(text)}`);
  assert.ok(!r.error.includes("\n"), `more than one line: ${r.error}`);
  return r.error;
}

Deno.test("YAML 1.1 scalars as sigs.k8s.io/yaml (go-yaml v2) resolves them", () => {
  assert.deepEqual(
    values(
      [
        "enforce: yes",
        "a: on",
        "b: Off",
        "c: NO",
        "d: 0644",
        "e: 0x1F",
        "f: 1_000",
        "g: 1:30",
        "h: 2001-12-14",
        "i: ~",
        "j: '0644'",
        "k: 1.5",
      ].join("\n"),
    ),
    [{
      enforce: true,
      a: true,
      b: false,
      c: false,
      d: 420,
      e: 31,
      f: 1000,
      g: "1:30",
      h: "2001-12-14",
      i: null,
      j: "0644",
      k: 1.5,
    }],
  );
});

Deno.test("merge keys: a map merged in, its own keys win", () => {
  assert.deepEqual(
    values("base: &b {maxTokens: 1, tokensPerFill: 1}\nbucket:\n  <<: *b\n  maxTokens: 5\n"),
    [{
      base: { maxTokens: 1, tokensPerFill: 1 },
      bucket: { maxTokens: 5, tokensPerFill: 1 },
    }],
  );
  assert.deepEqual(values("a: &a {x: 1}\nb: &b {z: 2}\nc:\n  <<: [*a, *b]\n"), [{
    a: { x: 1 },
    b: { z: 2 },
    c: { x: 1, z: 2 },
  }]);
});

Deno.test("kind: List (and any ...List with items) is read as its items, nested ones too", () => {
  const list = [
    "apiVersion: v1",
    "kind: List",
    "items:",
    "- {apiVersion: v1, kind: A}",
    "- {apiVersion: v1, kind: RateLimitList, items: [{kind: B}, {kind: C}]}",
  ].join("\n");
  assert.deepEqual(values(`${list}\n---\nkind: D\n`), [
    { apiVersion: "v1", kind: "A" },
    { kind: "B" },
    { kind: "C" },
    { kind: "D" },
  ]);
  // Without apiVersion or items it is an object like any other.
  assert.deepEqual(flattenLists([{ kind: "List" }]), [{ kind: "List" }]);
});

Deno.test("a duplicate key is refused with its line, in time linear in the keys", () => {
  assert.equal(refusal("a: 1\nb:\n  c: 1\n  c: 2\n"), 'f.yaml:4: duplicate key "c"');
  // `y` is the boolean true in YAML 1.1, so it repeats the key `true` (as in kubectl).
  assert.equal(refusal("true: 1\ny: 2\n"), 'f.yaml:2: duplicate key "true"');
  // An alias used as a key is its anchor's value: `? *k` repeats `spec` (it dropped the first).
  assert.equal(
    refusal("metadata: {name: &k spec}\nspec: 1\n? *k\n: 2\n"),
    'f.yaml:3: duplicate key "spec"',
  );
  assert.deepEqual(values("a: &k b\n? *k\n: 2\n"), [{ a: "b", b: 2 }]);
  assert.match(refusal("x: &m {a: 1}\n? *m\n: 2\n"), /^f\.yaml:2: a key must be a string/);
  const keys = ["metadata:", "  annotations:"];
  for (let i = 0; i < 40_000; i++) keys.push(`    k${i}: v`);
  const many = values(keys.join("\n"))[0] as { metadata: { annotations: object } };
  assert.equal(Object.keys(many.metadata.annotations).length, 40_000);
});

Deno.test("aliases that expand too far are refused, not expanded", () => {
  const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (const [i, k] of ["b", "c", "d", "e", "f", "g", "h", "i"].entries()) {
    laughs.push(`${k}: &${k} [${Array(9).fill(`*${"abcdefgh"[i]}`).join(",")}]`);
  }
  assert.match(refusal(laughs.join("\n")), /^f\.yaml:1: its aliases expand too far/);
  // A few aliases are fine.
  assert.deepEqual(values("a: &a [1, 2]\nb: *a\nc: *a\n"), [{ a: [1, 2], b: [1, 2], c: [1, 2] }]);
});

Deno.test("nesting, keys that are collections, and syntax errors: one line with the line", () => {
  const deep = Array.from({ length: MAX_DEPTH + 1 }, (_, i) => `${" ".repeat(i)}a:`).join("\n");
  assert.match(refusal(`${deep} 1`), new RegExp(`nested more than ${MAX_DEPTH} levels deep`));
  // Thousands deep, the parser's own recursion gives out first: said the same way.
  const flow = `a: ${"[".repeat(1200)}${"]".repeat(1200)}\n`;
  assert.equal(refusal(flow), `f.yaml:1: nested more than ${MAX_DEPTH} levels deep`);
  assert.match(refusal("? [1, 2]\n: x\n"), /^f\.yaml:1: a key must be a string/);
  assert.match(refusal("a: [1, 2\nb: 3\n"), /^f\.yaml:\d+: /);
  assert.match(refusal("a:\n\tb: 1\n"), /^f\.yaml:2: Tabs are not allowed/);
});

Deno.test("size: more than 3 MiB is refused before it is parsed", () => {
  const big = "a".repeat(MAX_INPUT_BYTES + 1);
  assert.match(refusal(big), /^f\.yaml: 3145729 bytes is larger than 3145728/);
  const bytes = new Uint8Array(MAX_INPUT_BYTES + 1);
  const r = decodeUtf8(bytes, "stdin");
  assert.ok(!r.ok && r.error.startsWith("stdin: 3145729 bytes"));
});

Deno.test("invalid UTF-8 is refused, naming the byte offset", () => {
  const enc = new TextEncoder();
  const at = (prefix: string, bad: number[]) => {
    const bytes = new Uint8Array([...enc.encode(prefix), ...bad]);
    const r = decodeUtf8(bytes, "f.yaml");
    assert.ok(!r.ok);
    return r.error;
  };
  assert.equal(
    at("path: /a", [0xff]),
    "f.yaml: not UTF-8: byte 8 (0xff) does not start or continue a UTF-8 character",
  );
  assert.match(at("é: ", [0xc3, 0x28]), /byte 5 \(0x28\)/); // a lead byte without its follower
  assert.match(at("", [0xed, 0xa0, 0x80]), /byte 1 \(0xa0\)/); // a UTF-16 surrogate
  assert.match(at("", [0xc0, 0xaf]), /byte 0 \(0xc0\)/); // an overlong form
  const ok = decodeUtf8(enc.encode("héllo 🙂"), "f.yaml");
  assert.deepEqual(ok, { ok: true, value: "héllo 🙂" });
});

Deno.test("firstInvalidUtf8 agrees with the platform's strict decoder", () => {
  const strict = new TextDecoder("utf-8", { fatal: true });
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 40 }), fc.string({ unit: "binary" }), (raw, s) => {
      for (const bytes of [raw, new TextEncoder().encode(s)]) {
        let valid = true;
        try {
          strict.decode(bytes);
        } catch {
          valid = false;
        }
        assert.equal(firstInvalidUtf8(bytes) === undefined, valid, JSON.stringify([...bytes]));
      }
    }),
    { seed: 40, numRuns: 3000 },
  );
});

Deno.test("metadata.name and namespace are checked as the API server checks them", () => {
  assert.deepEqual(objectMetaProblems({ metadata: { name: "httpbin", namespace: "demo" } }), []);
  assert.deepEqual(objectMetaProblems({ metadata: { name: "a.b-c" } }), []);
  const [name] = objectMetaProblems({ metadata: { name: "Bad_Name!" } });
  assert.match(name, /^metadata\.name: Invalid value: "Bad_Name!": a lowercase RFC 1123 subdomain/);
  const [ns] = objectMetaProblems({ metadata: { name: "a", namespace: "a.b" } });
  assert.match(ns, /^metadata\.namespace: Invalid value: "a\.b": a lowercase RFC 1123 label/);
  assert.match(
    objectMetaProblems({ metadata: { name: "a".repeat(254) } })[0],
    /must be no more than 253 characters/,
  );
  // Absent or not a string: left to the object's schema, which names what it lacks.
  assert.deepEqual(objectMetaProblems({ metadata: { name: 7 } }), []);
  assert.deepEqual(objectMetaProblems({}), []);
});

Deno.test("parseYamlDocument: one document, null for none, refused for two", () => {
  assert.deepEqual(parseYamlDocument("", "s.yaml"), { ok: true, value: null });
  assert.deepEqual(parseYamlDocument("a: 1", "s.yaml"), { ok: true, value: { a: 1 } });
  assert.deepEqual(parseYamlDocument("a: 1\n---\nb: 2\n", "s.yaml"), {
    ok: false,
    error: "s.yaml: expected one YAML document, found 2",
  });
});

Deno.test("an alias without an anchor before it is named, at its line, not taken for an attack", () => {
  assert.equal(
    refusal("spec:\n  local:\n    maxTokens: *nope\n"),
    "f.yaml:3: unresolved alias *nope (no anchor &nope before it)",
  );
  // As a key, and before its anchor.
  assert.equal(
    refusal("a: 1\n*k : 2\n"),
    "f.yaml:2: unresolved alias *k (no anchor &k before it)",
  );
  assert.equal(
    refusal("a: *x\nb: &x 1\n"),
    "f.yaml:1: unresolved alias *x (no anchor &x before it)",
  );
});
