/**
 * The pinned Istio: one version everywhere it is named, the EnvoyFilter CRD we install (the
 * simulator and the local control plane both install src/crd/istio.ts's) agrees with Istio's at
 * that commit, and a missing Go toolchain is an error that says what to install.
 */
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { goEnv, goVersion } from "../../tools/cluster/build.ts";
import { ensureIstioCheck, GO_MISSING, MODULE_DIR } from "../../tools/istio-check/build.ts";
import { envoyFilterCrd } from "../../src/crd/istio.ts";

const ROOT = resolve(import.meta.dirname ?? ".", "..", "..");
const ISTIO = "istio.io/istio";

type Json = Record<string, unknown>;

async function pinned(): Promise<string> {
  const gomod = await Deno.readTextFile(join(MODULE_DIR, "go.mod"));
  const m = gomod.match(/^\s*istio\.io\/istio (v\S+)$/m);
  assert.ok(m, "go.mod requires no istio.io/istio");
  return m[1];
}

Deno.test("the pinned Istio is the one go.mod, the binary, the README and the docs name", async () => {
  const version = await pinned();
  assert.match(version, /^v0\.0\.0-\d{14}-[0-9a-f]{12}$/, "a pseudo-version of Istio's main");
  const bin = await ensureIstioCheck();
  const out = await new Deno.Command(bin, { args: ["-version"] }).output();
  assert.equal(new TextDecoder().decode(out.stdout).trim(), version);
  for (const doc of ["tools/istio-check/README.md", "docs/istio-check.md"]) {
    const text = await Deno.readTextFile(join(ROOT, doc));
    assert.ok(text.includes(version), `${doc} does not name ${version}`);
    assert.ok(text.includes(`\`${version.slice(-12)}\``), `${doc} does not name the commit`);
    // Every pseudo-version it names is the pinned one.
    for (const v of text.match(/v0\.0\.0-\d{14}-[0-9a-f]{12}/g) ?? []) {
      assert.equal(v, version, doc);
    }
  }
});

/** Istio's EnvoyFilter CRD at the pinned commit, from the module Go downloaded. */
async function istioCrd(): Promise<Json> {
  if (await goVersion() === null) throw new Error(GO_MISSING);
  const out = await new Deno.Command("go", {
    args: ["list", "-m", "-f", "{{.Dir}}", ISTIO],
    cwd: MODULE_DIR,
    env: goEnv(),
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const dir = new TextDecoder().decode(out.stdout).trim();
  const text = await Deno.readTextFile(join(dir, "manifests/charts/base/files/crd-all.gen.yaml"));
  const crd = parseAllDocuments(text).map((d) => d.toJS() as Json).find((d) =>
    (d?.metadata as Json | undefined)?.name === "envoyfilters.networking.istio.io"
  );
  assert.ok(crd, "no EnvoyFilter CRD in Istio's crd-all.gen.yaml");
  return crd;
}

/** What the API serves and clients address: everything but schemas and metadata. */
function identity(crd: Json) {
  const spec = crd.spec as Json;
  return {
    group: spec.group,
    names: spec.names,
    scope: spec.scope,
    versions: (spec.versions as Json[]).map((v) => ({
      name: v.name,
      served: v.served,
      storage: v.storage,
      subresources: v.subresources,
    })),
  };
}

Deno.test("our EnvoyFilter CRD serves what Istio's CRD at the pinned commit serves", async () => {
  const istio = identity(await istioCrd());
  // The version the operator writes must be Istio's served and stored one.
  assert.deepEqual(istio.versions.map((v) => [v.name, v.served, v.storage]), [
    ["v1alpha3", true, true],
  ]);
  assert.deepEqual(identity(envoyFilterCrd()), istio, "src/crd/istio.ts");
  // Its labels are Istio's, as a `kubectl get crd -l app=istio-pilot` would select it.
  const meta = (await istioCrd()).metadata as { labels?: Record<string, string> };
  for (const [k, v] of Object.entries(envoyFilterCrd().metadata.labels ?? {})) {
    assert.equal(meta.labels?.[k], v, `label ${k}`);
  }
});

Deno.test("without Go, building istio-check fails naming what to install", async () => {
  const empty = await Deno.makeTempDir({ prefix: "istio-check-nogo-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--frozen", "tools/istio-check/build.ts"],
      cwd: ROOT,
      env: { PATH: empty, ISTIO_CHECK_CACHE_DIR: empty },
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, stderr);
    assert.ok(stderr.includes(GO_MISSING), stderr);
    assert.match(GO_MISSING, /Go 1\.26 or newer, https:\/\/go\.dev\/dl\//);
  } finally {
    await Deno.remove(empty, { recursive: true });
  }
});
