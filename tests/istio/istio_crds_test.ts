/**
 * Istio's own CRDs as data (data/upstream/istio): the stored file is byte for byte
 * `manifests/charts/base/files/crd-all.gen.yaml` of the istio.io/istio that tools/istio-check pins,
 * its provenance names that version and path and its SHA-256, and `istio_crds.ts --check` fails
 * naming what differs. Needs Go (the module comes from the Go module cache or proxy).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  crdNames,
  ISTIO_CRD_FILE,
  ISTIO_CRD_PATH,
  ISTIO_PROVENANCE_FILE,
  type IstioCrdProvenance,
  istioCrdsYaml,
  istioDataDir,
  istioModuleDir,
  pinnedIstioVersion,
  sha256,
} from "../../tools/cluster/istio_crds.ts";
import { runDenoScript } from "../command.ts";

/** Runs tools/cluster/istio_crds.ts with `args`; exit code and both outputs. */
const run = (args: string[]) => runDenoScript("tools/cluster/istio_crds.ts", args);

Deno.test("the stored Istio CRDs are the pinned module's file, byte for byte, as provenance says", async () => {
  const stored = await Deno.readFile(join(istioDataDir(), ISTIO_CRD_FILE));
  const upstream = await Deno.readFile(join(await istioModuleDir(), ISTIO_CRD_PATH));
  assert.equal(sha256(stored), sha256(upstream));
  assert.equal(stored.length, upstream.length);
  const prov = JSON.parse(
    await Deno.readTextFile(join(istioDataDir(), ISTIO_PROVENANCE_FILE)),
  ) as IstioCrdProvenance;
  assert.deepEqual(
    [prov.source, prov.version, prov.upstream, prov.data, prov.sha256],
    [
      "istio.io/istio",
      await pinnedIstioVersion(),
      [ISTIO_CRD_PATH],
      ISTIO_CRD_FILE,
      sha256(stored),
    ],
  );
  const names = crdNames(await istioCrdsYaml());
  assert.equal(names.length, 15);
  assert.ok(names.includes("envoyfilters.networking.istio.io"));
  assert.ok(names.includes("virtualservices.networking.istio.io"));
});

Deno.test("istio_crds.ts --check passes here, and names an edited file and a wrong provenance", async () => {
  const ok = await run(["--check"]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^istio CRDs are up to date \(15 CRDs\)$/m);
  const root = await Deno.makeTempDir({ prefix: "istio-crds-" });
  try {
    const dir = istioDataDir(root);
    await Deno.mkdir(dir, { recursive: true });
    // --write into an empty root gives the committed files.
    const wrote = await run(["--write", "--root", root]);
    assert.equal(wrote.code, 0, wrote.stderr);
    for (const f of [ISTIO_CRD_FILE, ISTIO_PROVENANCE_FILE]) {
      assert.equal(
        await Deno.readTextFile(join(dir, f)),
        await Deno.readTextFile(join(istioDataDir(), f)),
        f,
      );
    }
    const file = join(dir, ISTIO_CRD_FILE);
    const text = await Deno.readTextFile(file);
    await Deno.writeTextFile(file, text.replace("kind: EnvoyFilter", "kind: EnvoyFiltre"));
    const prov = join(dir, ISTIO_PROVENANCE_FILE);
    await Deno.writeTextFile(
      prov,
      (await Deno.readTextFile(prov)).replace(/"version": "[^"]+"/, '"version": "v1.0.0"'),
    );
    const bad = await run(["--check", "--root", root]);
    assert.equal(bad.code, 1, bad.stdout);
    assert.match(
      bad.stderr,
      /crd-all\.gen\.yaml is not manifests\/charts\/base\/files\/crd-all\.gen\.yaml of istio\.io\/istio v0\.0\.0-/,
    );
    assert.match(bad.stderr, /provenance\.json: version is "v1\.0\.0", expected "v0\.0\.0-/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
