/**
 * Each module's upstream CRDs (data/upstream/<module>/crds.json) are what their provenance says:
 * its SHA-256 matches, so a hand edit fails here without Go (tests/modules/module_crds_test.ts
 * regenerates them from the pinned sources).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { layout, REPO_ROOT } from "../../tools/crdgen/mod.ts";
import { CRDS_JSON, PROVENANCE_JSON, provenanceMismatch } from "../../tools/crdgen/data.ts";

Deno.test("every module's CRD data has the SHA-256 its provenance records", async () => {
  const { keda, serverless } = layout(REPO_ROOT);
  for (const dir of [keda, serverless]) assert.equal(await provenanceMismatch(dir), undefined, dir);
});

Deno.test("the provenance check names an edited or missing data file and a bad provenance", async () => {
  const dir = await Deno.makeTempDir({ prefix: "provenance-" });
  try {
    const from = layout(REPO_ROOT).serverless;
    for (const f of [CRDS_JSON, PROVENANCE_JSON]) await Deno.copyFile(join(from, f), join(dir, f));
    assert.equal(await provenanceMismatch(dir), undefined);
    const crds = join(dir, CRDS_JSON);
    await Deno.writeTextFile(crds, (await Deno.readTextFile(crds)).replace('"fn"', '"fx"'));
    assert.match(
      (await provenanceMismatch(dir))!,
      /\/crds\.json has SHA-256 [0-9a-f]{64}, not the [0-9a-f]{64} of provenance\.json$/,
    );
    await Deno.remove(crds);
    assert.match((await provenanceMismatch(dir))!, /\/crds\.json is missing$/);
    await Deno.writeTextFile(join(dir, PROVENANCE_JSON), '{"data":"other.json"}');
    assert.match((await provenanceMismatch(dir))!, /"data" must be "crds\.json"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
