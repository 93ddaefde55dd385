/**
 * tools/image/binary_image.ts: two processes (here two calls at once) making the same image take
 * turns, so one builds it and the other reuses it, where both used to build it in one context
 * folder and the second found the folder gone (seen when a test's `./deno task build` ran beside
 * CI's background build). Needs podman; skipped, loudly, without it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { binaryImage, type BinaryImageSpec, inspectImage } from "../../tools/image/binary_image.ts";
import { makeBases, RUNTIME_BASE } from "../../tools/image/base.ts";
import { podman, RESTRICTED_RUN } from "../../tools/image/podman.ts";

const hasPodman = await new Deno.Command("podman", { args: ["--version"] }).output()
  .then((o) => o.success, () => false);
if (!hasPodman) {
  console.error("\n!!! SKIPPED tests/deploy/binary_image_test.ts: podman is not installed\n");
}

Deno.test({
  name: "binaryImage: two builds of one image at once, one builds and the other reuses it",
  ignore: !hasPodman,
  async fn() {
    const lines: string[] = [];
    const say = (l: string) => lines.push(l);
    await makeBases(say);
    const label = "io.platform-operator.test.inputs";
    const baseId = (await inspectImage(RUNTIME_BASE, label)).Id;
    const ref = `localhost/platform-operator-test/binary-image:${Deno.pid}`;
    const tmp = await Deno.makeTempDir({ prefix: "binary-image-" });
    // `true` links only glibc, which the runtime base has.
    const spec: BinaryImageSpec = {
      ref,
      binaryPath: "/usr/bin/true",
      contextName: "true",
      containerfile: (hash) =>
        [
          `FROM ${RUNTIME_BASE}`,
          "COPY true /true",
          `LABEL ${label}=${hash}`,
          'ENTRYPOINT ["/true"]',
        ]
          .join("\n") + "\n",
      inputsLabel: label,
      baseId,
      archive: join(tmp, "image.tar"),
      contextDir: join(tmp, "context"),
      smoke: async (r) => {
        const run = await podman([...RESTRICTED_RUN, r], { check: false });
        assert.ok(run.success, `${r} runs: ${run.stderr}`);
      },
    };
    try {
      const both = await Promise.all([binaryImage(say, spec), binaryImage(say, spec)]);
      assert.deepEqual(both.map((i) => i.reused).sort(), [false, true], lines.join("\n"));
      assert.equal(both[0].id, both[1].id);
      assert.ok((await Deno.stat(spec.archive)).size > 0);
    } finally {
      await podman(["rmi", "-f", ref], { check: false });
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
