/** The checked-in CRDs are the generated ones, valid apiextensions/v1 objects with structural schemas. */
import assert from "node:assert/strict";
import { CustomResourceDefinition } from "kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition";
import { parse } from "yaml";
import { CRDS_DIR, crdsFiles, foreignFiles, readYamlFiles } from "../../src/cli/crds.ts";
import { staleFiles } from "../../src/cli/generated_files.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { GENERATED_HEADER, renderCrdFiles } from "../../src/crd/render.ts";
import { structuralProblems } from "../../src/crd/structural.ts";

const onDisk = await readYamlFiles(CRDS_DIR);

Deno.test("crds/ holds exactly what the schemas in src/api/ generate (else: deno task crds)", async () => {
  assert.deepEqual(await staleFiles(crdsFiles(CRDS_DIR)), []);
  assert.deepEqual(await foreignFiles(CRDS_DIR), []);
});

Deno.test("generating twice gives byte-identical files", () => {
  assert.deepEqual(renderCrdFiles(), renderCrdFiles());
});

Deno.test("each checked-in file is one YAML document with the generated header", () => {
  assert.equal(onDisk.size, 3);
  for (const [name, text] of onDisk) {
    assert.ok(text.startsWith(`${GENERATED_HEADER}\n`), name);
    assert.ok(!/^---$/m.test(text), `${name} has more than one document`);
    const crd = parse(text);
    assert.equal(`${crd.metadata.name}.yaml`, name);
  }
});

Deno.test("each checked-in CRD passes kubernetes-models' apiextensions.k8s.io/v1 validation", () => {
  for (const [name, text] of onDisk) {
    assert.doesNotThrow(() => new CustomResourceDefinition(parse(text)).validate(), name);
  }
});

Deno.test("the kubernetes-models validator does reject a broken CRD", () => {
  const [crd] = customResourceDefinitions();
  const broken = { ...crd, spec: { ...crd.spec, scope: 7 } } as unknown as CustomResourceDefinition;
  assert.throws(() => new CustomResourceDefinition(broken).validate(), /scope must be string/);
});

Deno.test("each checked-in CRD schema is structural, typed and described everywhere", () => {
  for (const [name, text] of onDisk) {
    const crd = parse(text);
    for (const version of crd.spec.versions) {
      assert.deepEqual(structuralProblems(version.schema.openAPIV3Schema), [], name);
    }
  }
});

/** The paths of schema nodes that state a `default` (a property named default is not one). */
function defaults(schema: unknown, path = ""): string[] {
  if (schema === null || typeof schema !== "object") return [];
  const node = schema as Record<string, unknown>;
  const out = "default" in node ? [path] : [];
  for (const [k, v] of Object.entries(node)) {
    if (k === "properties" && v !== null && typeof v === "object") {
      for (const [p, sub] of Object.entries(v)) out.push(...defaults(sub, `${path}.${p}`));
    } else if (k !== "default") out.push(...defaults(v, `${path}/${k}`));
  }
  return out;
}

Deno.test("no CRD defaults a field or keeps unknown fields", () => {
  // A stated default is found; a property named default (spec.global.default) is not one.
  assert.deepEqual(
    defaults({
      properties: { a: { type: "boolean", default: true }, default: { type: "object" } },
    }),
    [".a"],
  );
  for (const [name, text] of onDisk) {
    const crd = parse(text);
    for (const version of crd.spec.versions) {
      assert.deepEqual(defaults(version.schema.openAPIV3Schema), [], `${name} has a default`);
    }
    assert.ok(
      !text.includes("x-kubernetes-preserve-unknown-fields"),
      `${name} keeps unknown fields`,
    );
    assert.ok(!text.includes("additionalProperties: false"), name);
  }
});

Deno.test("names, scope, versions, subresource, columns, short names and category", () => {
  const byName = new Map(customResourceDefinitions().map((c) => [c.metadata.name, c]));
  assert.deepEqual([...byName.keys()].sort(), [
    "ratelimits.gateway.platform-project.io",
    "scalers.operator.platform-project.io",
    "serverlesses.operator.platform-project.io",
  ]);
  const expected = {
    "serverlesses.operator.platform-project.io": ["Serverless", "svls", ["State", "Served", "Age"]],
    "scalers.operator.platform-project.io": ["Scaler", "scl", ["State", "Served", "Age"]],
    "ratelimits.gateway.platform-project.io": ["RateLimit", "rl", ["Status", "Age"]],
  } as const;
  for (const [name, [kind, shortName, columns]] of Object.entries(expected)) {
    const crd = byName.get(name)!;
    assert.equal(crd.spec.names.kind, kind);
    assert.equal(`${crd.spec.names.plural}.${crd.spec.group}`, name);
    assert.equal(crd.spec.scope, "Namespaced");
    assert.deepEqual(crd.spec.names.shortNames, [shortName]);
    assert.deepEqual(crd.spec.names.categories, ["platform"]);
    assert.equal(crd.spec.versions.length, 1);
    const [v] = crd.spec.versions;
    assert.deepEqual([v.name, v.served, v.storage], ["v1alpha1", true, true]);
    assert.deepEqual(v.subresources, { status: {} });
    // `kubectl get` shows the priority-0 columns; `-o wide` adds the others.
    const shown = v.additionalPrinterColumns.filter((c) => !c.priority).map((c) => c.name);
    assert.deepEqual(shown, columns);
    const paths = Object.fromEntries(v.additionalPrinterColumns.map((c) => [c.name, c.jsonPath]));
    assert.equal(paths.Age, ".metadata.creationTimestamp");
    assert.equal(paths.State ?? paths.Status, ".status.state");
    if (paths.Served) assert.equal(paths.Served, ".status.served");
  }
  const wide = byName.get("ratelimits.gateway.platform-project.io")!.spec.versions[0]
    .additionalPrinterColumns.filter((c) => c.priority === 1);
  assert.deepEqual(wide.map((c) => [c.name, c.jsonPath]), [
    ["Enforced", '.status.conditions[?(@.type=="Enforced")].status'],
    ["Accepted", '.status.conditions[?(@.type=="Accepted")].status'],
    ["Pods", ".status.podsSelected"],
    ["Sidecars", ".status.podsWithSidecar"],
    ["Enforced-Gen", ".status.enforcedGeneration"],
    ["Mode", ".status.mode"],
    ["Workload-Rate", ".status.rates[0].workload"],
  ]);
});
