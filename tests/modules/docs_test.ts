/**
 * README.md and docs/modules.md name the upstream versions the CRDs are generated from, so a
 * version bump (`deno task module-crds --keda ...`) fails here until the docs follow.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { layout, REPO_ROOT, requiredVersion } from "../../tools/crdgen/mod.ts";
import KEDA from "../../data/upstream/keda/provenance.json" with { type: "json" };
import FUNCTION from "../../data/upstream/serverless/provenance.json" with { type: "json" };
import { KEDA_VERSION } from "../../src/reconcile/scaler/names.ts";
import { DEFAULT_IMAGES } from "../../src/cli/run_flags.ts";

const read = (p: string) => Deno.readTextFile(join(REPO_ROOT, p));
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

Deno.test("the installed KEDA version is the one the CRDs come from: images, kedaVersion, go.mod", async () => {
  const gomod = await Deno.readTextFile(join(layout(REPO_ROOT).goModule, "go.mod"));
  assert.equal(`v${KEDA_VERSION}`, requiredVersion(gomod, "github.com/kedacore/keda/v2"));
  assert.equal(KEDA_VERSION, KEDA.version);
  for (const image of [DEFAULT_IMAGES.kedaOperator, DEFAULT_IMAGES.kedaMetricsServer]) {
    assert.ok(image.endsWith(`:${KEDA_VERSION}`), image);
  }
  assert.ok(DEFAULT_IMAGES.kedaAdmissionWebhooks.endsWith(`:${KEDA_VERSION}`));
  assert.equal(KEDA.controllerGen, requiredVersion(gomod, "sigs.k8s.io/controller-tools"));
});

Deno.test("README.md and docs name the upstream versions and how to regenerate", async () => {
  assert.match(await read("README.md"), new RegExp(`KEDA ${esc(KEDA.version)}`));
  // The settings (docs/design.md) and the operator's flags (docs/operations.md).
  const readme = `${await read("docs/design.md")}\n${await read("docs/operations.md")}`;
  const docs = await read("docs/modules.md");
  assert.match(readme, new RegExp(`\\*\\*KEDA version\\*\\*: ${esc(KEDA.version)} `));
  assert.match(readme, new RegExp(`Kyma\\s+serverless ${esc(FUNCTION.version)}`));
  assert.match(readme, new RegExp(`controller-gen ${esc(KEDA.controllerGen)}`));
  assert.match(readme, /`\.\/deno task module-crds`.*\[docs\/modules\.md\]/s);
  for (const image of ["keda", "keda-metrics-apiserver", "keda-admission-webhooks"]) {
    assert.match(readme, new RegExp(`ghcr\\.io/kedacore/${image}:${esc(KEDA.version)} `));
  }
  assert.match(docs, new RegExp(`\\| KEDA +\\| ${esc(KEDA.version)} +\\|`));
  assert.match(docs, new RegExp(`github\\.com/kedacore/keda/v2\` v${esc(KEDA.version)}`));
  assert.match(docs, new RegExp(`\\| controller-gen +\\| ${esc(KEDA.controllerGen)} +\\|`));
  assert.match(
    docs,
    new RegExp(`\\| ${esc(FUNCTION.version)}, commit \`${FUNCTION.commit}\` +\\|`),
  );
  assert.match(docs, new RegExp(`--keda v${esc(KEDA.version)}\\n`));
  assert.match(
    docs,
    new RegExp(`--tag ${esc(FUNCTION.version)} --commit ${FUNCTION.commit}\\n`),
  );
});
