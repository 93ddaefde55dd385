/**
 * tools/keda against KEDA's own module: the version is the one the operator renders, the replace
 * directives are KEDA's, the packages are KEDA's commands, the images' entrypoints are those of
 * KEDA's Dockerfiles. Needs `go` (reads the module through `go mod download`); skipped without.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { goVersion, runGo } from "../../tools/gobuild.ts";
import {
  KEDA_GO_DIR,
  KEDA_MODULE,
  KEDA_PROGRAMS,
  kedaBuilds,
  kedaLdflags,
  kedaVersion,
} from "../../tools/keda/build.ts";
import { KEDA_IMAGES, kedaImageRef } from "../../tools/keda/image.ts";
import { KEDA_VERSION } from "../../src/reconcile/scaler/names.ts";

const noGo = await goVersion(KEDA_GO_DIR) === null;

async function kedaDir(): Promise<string> {
  const out = await runGo(
    ["mod", "download", "-json", `${KEDA_MODULE}@${await kedaVersion()}`],
    KEDA_GO_DIR,
  );
  return (JSON.parse(out) as { Dir: string }).Dir;
}

/** The replace block of a go.mod, without comments and blank lines. */
function replaces(gomod: string): string[] {
  const block = /^replace \(\n([\s\S]*?)^\)/m.exec(gomod)?.[1] ?? "";
  return block.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("//"));
}

Deno.test("tools/keda builds the KEDA release the operator renders", async () => {
  assert.equal(await kedaVersion(), `v${KEDA_VERSION}`);
  assert.equal(
    kedaImageRef("operator", await kedaVersion()),
    `localhost/kedacore/keda:${KEDA_VERSION}`,
  );
  const ldflags = kedaLdflags(await kedaVersion());
  assert.match(
    ldflags,
    new RegExp(`version\\.Version=${KEDA_VERSION.replaceAll(".", "\\.")}( |$)`),
  );
  const builds = await kedaBuilds();
  assert.deepEqual(builds.map((b) => b.outputs), [
    ["keda"],
    ["keda-adapter"],
    ["keda-admission-webhooks"],
  ]);
  assert.ok(builds.every((b) => b.ldflags === ldflags && b.dir === KEDA_GO_DIR));
});

Deno.test({
  name: "tools/keda: KEDA's replace directives, commands and Dockerfile entrypoints",
  ignore: noGo,
  async fn() {
    const dir = await kedaDir();
    const theirs = await Deno.readTextFile(join(dir, "go.mod"));
    const ours = await Deno.readTextFile(join(KEDA_GO_DIR, "go.mod"));
    assert.ok(replaces(theirs).length > 10, "KEDA's go.mod has its replace block");
    assert.deepEqual(replaces(ours), replaces(theirs));
    for (const { pkg } of Object.values(KEDA_PROGRAMS)) {
      const main = await Deno.readTextFile(join(dir, pkg.slice(KEDA_MODULE.length + 1), "main.go"));
      assert.match(main, /^package main$/m, pkg);
    }
    const dockerfiles = {
      operator: "Dockerfile",
      metricServer: "Dockerfile.adapter",
      admissionWebhook: "Dockerfile.webhooks",
    } as const;
    for (const [program, file] of Object.entries(dockerfiles)) {
      const text = await Deno.readTextFile(join(dir, file));
      const entry = /^ENTRYPOINT (\[.*\])$/m.exec(text)?.[1];
      assert.ok(entry, `${file} has an ENTRYPOINT`);
      assert.deepEqual(
        KEDA_IMAGES[program as keyof typeof dockerfiles].entrypoint,
        JSON.parse(entry),
      );
      assert.match(text, /^USER 65532:65532$/m, file);
    }
  },
});
