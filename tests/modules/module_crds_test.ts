/**
 * The modules' upstream CRDs (`deno task module-crds`, kept in data/upstream/): the committed ones
 * are what the pinned KEDA and controller-gen give (regenerated here, any difference fails), a
 * Function CRD that disagrees with its provenance is refused, controller-gen's output is KEDA's own
 * `config/crd/bases`, every command docs/modules.md shows runs, and a missing Go is one clear
 * error. Needs Go and the Go module proxy, like the e2e tests.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { generateKeda, kedaModule, layout, REPO_ROOT } from "../../tools/crdgen/mod.ts";
import { CRDS_JSON, type Provenance, PROVENANCE_JSON } from "../../tools/crdgen/data.ts";
import { FUNCTION_CRD } from "../../src/reconcile/serverless/render.ts";
import { docCommands, run, task, tempRoot, writeFunctionFixture } from "./helpers.ts";

/** A module's committed data files: the CRDs and their provenance. */
async function dataOf(dir: string): Promise<{ crds: CrdDoc[]; provenance: Provenance }> {
  const read = async (f: string) => JSON.parse(await Deno.readTextFile(join(dir, f)));
  return { crds: await read(CRDS_JSON), provenance: await read(PROVENANCE_JSON) };
}

interface CrdDoc {
  metadata: { name: string };
  spec: {
    group: string;
    names: { shortNames?: string[]; categories?: string[] };
    versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[];
  };
}

Deno.test("module-crds --check: the committed CRDs are what the pinned KEDA and controller-gen give", async () => {
  const r = await task(["--check"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /module CRDs are up to date \(4 files\)/);
});

Deno.test("module-crds --check fails on any difference and names each stale file", async () => {
  const root = await tempRoot();
  try {
    const paths = layout(root);
    const crds = join(paths.keda, CRDS_JSON);
    const text = await Deno.readTextFile(crds);
    assert.match(text, /"so"\n/);
    await Deno.writeTextFile(crds, text.replace(/"so"\n/, '"sox"\n'));
    await Deno.writeTextFile(join(paths.keda, "stray.yaml"), "kind: Nothing\n");
    const r = await task(["--check", "--root", root]);
    assert.equal(r.code, 1, r.stdout);
    for (const f of ["data/upstream/keda/crds.json", "data/upstream/keda/stray.yaml"]) {
      assert.match(r.stderr, new RegExp(`^  ${f.replaceAll(".", "\\.")}$`, "m"), r.stderr);
    }
    assert.doesNotMatch(r.stderr, /provenance|serverless/, "only the changed files are named");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("module-crds refuses a Function CRD that disagrees with its provenance (it cannot regenerate it)", async () => {
  const root = await tempRoot();
  try {
    const crds = join(layout(root).serverless, CRDS_JSON);
    await Deno.writeTextFile(crds, (await Deno.readTextFile(crds)).replace('"fns"', '"fnx"'));
    for (const args of [["--check"], []]) {
      const r = await task([...args, "--root", root]);
      assert.equal(r.code, 1, r.stdout);
      assert.match(
        r.stderr,
        /^module-crds: \S+\/data\/upstream\/serverless\/crds\.json has SHA-256 [0-9a-f]{64}, not the [0-9a-f]{64} of provenance\.json: regenerate it with --serverless DIR --tag TAG --commit SHA$/m,
      );
    }
    assert.match(await Deno.readTextFile(crds), /"fnx"/, "nothing written over it");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("controller-gen over KEDA's Go types gives KEDA's committed config/crd/bases byte for byte", async () => {
  const out = await Deno.makeTempDir({ prefix: "keda-bases-" });
  try {
    await generateKeda(REPO_ROOT, out, true);
    const { dir } = await kedaModule(layout(REPO_ROOT).goModule);
    const bases = join(dir, "config", "crd", "bases");
    const names = async (d: string) =>
      (await Array.fromAsync(Deno.readDir(d))).map((e) => e.name).sort();
    assert.deepEqual(await names(out), await names(bases));
    assert.equal((await names(out)).length, 6);
    for (const name of await names(out)) {
      const ours = await Deno.readTextFile(join(out, name));
      // KEDA's files start with "---" (its Makefile runs controller-gen with the same options).
      assert.equal(ours, await Deno.readTextFile(join(bases, name)), name);
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("the committed KEDA CRDs carry KEDA's kustomize patches", async () => {
  const { crds } = await dataOf(layout(REPO_ROOT).keda);
  const schema = (name: string) =>
    crds.find((c) => c.metadata.name === name)!.spec.versions[0].schema.openAPIV3Schema;
  const at = (o: unknown, path: string): unknown =>
    path.split("/").reduce<unknown>((v, k) => (v as Record<string, unknown>)?.[k], o);
  const sj = schema("scaledjobs.keda.sh");
  assert.equal(
    at(sj, "properties/spec/properties/triggers/items/properties/metricType"),
    undefined,
  );
  const template = "properties/spec/properties/jobTargetRef/properties/template/properties";
  assert.equal(at(sj, `${template}/metadata/x-kubernetes-preserve-unknown-fields`), true);
  const so = schema("scaledobjects.keda.sh");
  const scaleUp = at(
    so,
    "properties/spec/properties/advanced/properties/horizontalPodAutoscalerConfig/properties/behavior/properties/scaleUp/properties/stabilizationWindowSeconds",
  ) as { minimum?: number; maximum?: number };
  assert.deepEqual([scaleUp.minimum, scaleUp.maximum], [0, 3600]);
  assert.deepEqual(at(so, "properties/spec/required"), ["scaleTargetRef", "triggers"]);
});

Deno.test("the Function CRD's provenance names its Kyma tag and commit, and it has this project's group", async () => {
  const { crds, provenance } = await dataOf(layout(REPO_ROOT).serverless);
  assert.match(
    provenance.generatedBy,
    /kyma-project\/serverless 1\.13\.0 .*\(commit 9ff7d2daa37c59ba0b1d620db371726c72e20a8d\)/,
  );
  assert.deepEqual(
    [provenance.version, provenance.commit, provenance.upstream],
    [
      "1.13.0",
      "9ff7d2daa37c59ba0b1d620db371726c72e20a8d",
      ["components/buildless-serverless/api/v1alpha2"],
    ],
  );
  assert.equal(crds.length, 1);
  const [crd] = crds;
  assert.equal(crd.metadata.name, FUNCTION_CRD);
  assert.equal(crd.spec.group, "serverless.platform-project.io");
  assert.deepEqual([crd.spec.names.shortNames, crd.spec.names.categories], [["fn", "fns"], [
    "all",
  ]]);
  const text = await Deno.readTextFile(join(layout(REPO_ROOT).serverless, CRDS_JSON));
  assert.ok(!text.includes('"serverless.kyma-project.io"'), "Kyma's group is renamed");
});

Deno.test("every command docs/modules.md shows runs (on a copy of the repository)", async () => {
  const commands = await docCommands();
  assert.deepEqual(commands.map((c) => c.split(" ").slice(0, 5).join(" ")), [
    "./deno task module-crds",
    "./deno task module-crds --check",
    "./deno task module-crds --keda v2.20.2",
    "./deno task module-crds --serverless /tmp/kyma-serverless",
  ]);
  const root = await tempRoot();
  const checkout = await writeFunctionFixture();
  try {
    const paths = layout(root);
    const before = await Deno.readTextFile(join(paths.goModule, "go.mod"));
    const sumBefore = await Deno.readTextFile(join(paths.goModule, "go.sum"));
    for (const command of commands) {
      // Kyma's repository is not on the Go module proxy: the test's checkout is a stand-in.
      const args = command.replace("./deno task module-crds", "").replace(
        "/tmp/kyma-serverless",
        checkout,
      ).trim().split(/\s+/).filter(Boolean);
      const r = await task([...args, "--root", root]);
      assert.equal(r.code, 0, `${command}:\n${r.stdout}\n${r.stderr}`);
      if (args.includes("--serverless")) continue;
      for (const dir of [paths.keda, paths.serverless]) {
        for await (const e of Deno.readDir(dir)) {
          const repoFile = join(dir.replace(root, REPO_ROOT), e.name);
          assert.equal(
            await Deno.readTextFile(join(dir, e.name)),
            await Deno.readTextFile(repoFile),
            `${command} changed ${e.name}`,
          );
        }
      }
    }
    assert.equal(await Deno.readTextFile(join(paths.goModule, "go.mod")), before, "go.mod");
    assert.equal(await Deno.readTextFile(join(paths.goModule, "go.sum")), sumBefore, "go.sum");
    // The stand-in's data, its provenance naming the tag and commit given.
    const { crds: [crd], provenance } = await dataOf(paths.serverless);
    assert.deepEqual([crd.spec.group, crd.spec.names.shortNames], [
      "serverless.platform-project.io",
      ["stand-in"],
    ]);
    assert.deepEqual([provenance.version, provenance.commit], [
      "1.13.0",
      "9ff7d2daa37c59ba0b1d620db371726c72e20a8d",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(checkout, { recursive: true });
  }
});

Deno.test("without Go the task stops with one clear error", async () => {
  const path = (Deno.env.get("PATH") ?? "").split(":").filter((d) => {
    try {
      return !Deno.statSync(join(d, "go")).isFile;
    } catch {
      return true;
    }
  }).join(":");
  const r = await run(["task", "module-crds", "--check"], { PATH: path });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^module-crds: no "go" on PATH: Go 1\.26 /m);
  assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");
});
