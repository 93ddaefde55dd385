/**
 * The Go builds of one k8s.io line compile every module they share at one version, so Go's build
 * cache compiles a shared package once (tools/build.ts `sharedVersionGroups`). Needs `go` and the
 * module proxy (reads the builds' packages with `go list -deps`); skipped without go.
 */
import assert from "node:assert/strict";
import { buildModules, goVersion, versionDisagreements } from "../../tools/gobuild.ts";
import { sharedVersionGroups } from "../../tools/build.ts";
import { REPO_ROOT } from "../../tools/cluster/paths.ts";

Deno.test("versionDisagreements names each module two builds use at different versions", () => {
  const m = (o: Record<string, string>) => new Map(Object.entries(o));
  const found = versionDisagreements([
    { name: "a", modules: m({ x: "v1.0.0", y: "v2.0.0", only: "v1.0.0" }) },
    { name: "b", modules: m({ x: "v1.0.0", y: "v2.1.0" }) },
    { name: "c", modules: m({ y: "v2.0.0", z: "v3.0.0" }) },
  ]);
  assert.deepEqual([...found], [["y", { a: "v2.0.0", b: "v2.1.0", c: "v2.0.0" }]]);
  assert.equal(versionDisagreements([{ name: "a", modules: m({ x: "v1" }) }]).size, 0);
});

const noGo = await goVersion(REPO_ROOT) === null;

Deno.test({
  name: "each group of Go builds uses one version of every module its builds share",
  ignore: noGo,
  async fn() {
    for (const group of await sharedVersionGroups()) {
      assert.ok(group.builds.length >= 2, group.name);
      const builds = await Promise.all(
        group.builds.map(async (b) => ({ name: b.name, modules: await buildModules(b) })),
      );
      // The groups are worth keeping only while their builds share the k8s.io modules.
      const shared = [...builds[0].modules.keys()].filter((p) =>
        builds.every((b) => b.modules.has(p))
      );
      assert.ok(shared.includes("k8s.io/apimachinery"), `${group.name}: ${shared.length} shared`);
      const found = versionDisagreements(builds);
      assert.deepEqual(
        Object.fromEntries(found),
        {},
        `${group.name}: align these in the builds' go.mod files (go get MODULE@VERSION)`,
      );
    }
  },
});
