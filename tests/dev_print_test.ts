/**
 * README shows what `./deno task dev` prints to try: each of its lines must be one dev prints
 * (with the checkout's path for `<repo>`), since tests/e2e/dev_test.ts runs what dev prints.
 */
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { tryLines } from "../tools/dev.ts";
import { pageCommands } from "./docs_shown.ts";

const ROOT = resolve(import.meta.dirname ?? ".", "..");

Deno.test("README: the lines `./deno task dev` prints to try are the ones README shows", async () => {
  const shown = pageCommands("README.md", await Deno.readTextFile(join(ROOT, "README.md")))
    .filter((c) => c.form === "sh" && /^(export|kubectl) /.test(c.command))
    .map((c) => c.command.replaceAll("<repo>", ROOT));
  assert.ok(shown.length >= 5, shown.join("\n"));
  const printed = tryLines({
    // The default cluster directory, as README shows it (without CLUSTER_CACHE_DIR).
    kubeconfig: join(ROOT, ".cache", "cluster", "default", "kubeconfig"),
    kubectlPath: join(ROOT, ".cache", "cluster", "bin", "kubectl"),
  }).split("\n").map((l) => l.trim());
  for (const line of shown) assert.ok(printed.includes(line), `dev does not print: ${line}`);
});
