/**
 * The commands docs/istio-check.md shows, run as written: the ones to run it by hand from the
 * repository root, and the ones that move the pin on a copy of the module (which must leave
 * go.mod and go.sum as they are: the pin is tidy and the one documented).
 */
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { goEnv } from "../../tools/cluster/build.ts";
import { ensureIstioCheck, MODULE_DIR } from "../../tools/istio-check/build.ts";

const ROOT = resolve(import.meta.dirname ?? ".", "..", "..");

/** The fenced `sh` blocks of the page, each as its command lines. */
async function shBlocks(): Promise<string[][]> {
  const text = await Deno.readTextFile(join(ROOT, "docs/istio-check.md"));
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1].trim().split("\n"));
}

async function sh(line: string, cwd: string, env: Record<string, string> = {}) {
  const out = await new Deno.Command("sh", { args: ["-c", line], cwd, env, stdin: "null" })
    .output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("docs/istio-check.md: the commands to run it by hand work as shown", async () => {
  await ensureIstioCheck((m) => console.error(`[istio-check] ${m}`));
  const [run] = await shBlocks();
  assert.equal(run.length, 4, run.join("\n"));
  // The page's paths are the default cache directory's.
  const env = { ISTIO_CHECK_CACHE_DIR: join(ROOT, ".cache", "istio-check") };
  const results = [];
  for (const line of run) {
    const r = await sh(line, ROOT, env);
    assert.equal(r.code, 0, `${line}\n${r.stdout}${r.stderr}`);
    results.push(r.stdout);
  }
  assert.equal(results[0].trim(), join(ROOT, ".cache", "istio-check", "istio-check"));
  const rendered = results[1].match(/^(\d+) EnvoyFilters in /m);
  assert.ok(rendered, results[1]);
  assert.match(results[2], new RegExp(`^istio-check: all ${rendered[1]} cases passed$`, "m"));
  assert.match(results[3], /^v0\.0\.0-\d{14}-[0-9a-f]{12}\n$/);
});

Deno.test("docs/istio-check.md: moving the pin to the documented version changes nothing", async () => {
  const [, move] = await shBlocks();
  assert.equal(move[0], "cd tools/istio-check", move.join("\n"));
  const copy = await Deno.makeTempDir({ prefix: "istio-check-pin-" });
  try {
    const dir = join(copy, "tools", "istio-check");
    // Every Go file of the module, its packages below the top level included (tidy reads them all).
    const copyGo = async (from: string, to: string) => {
      await Deno.mkdir(to, { recursive: true });
      for await (const e of Deno.readDir(from)) {
        if (e.isDirectory) await copyGo(join(from, e.name), join(to, e.name));
        else if (e.isFile && /\.(go|mod|sum)$/.test(e.name)) {
          await Deno.copyFile(join(from, e.name), join(to, e.name));
        }
      }
    };
    await copyGo(MODULE_DIR, dir);
    // The build's Go environment (local toolchain, no VCS stamping), as the pin is used.
    const { GOTOOLCHAIN } = goEnv();
    const r = await sh(move.join(" && "), copy, { GOTOOLCHAIN });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    for (const f of ["go.mod", "go.sum"]) {
      assert.equal(
        await Deno.readTextFile(join(dir, f)),
        await Deno.readTextFile(join(MODULE_DIR, f)),
        `${f} changed: the pin is not tidy or not the documented version`,
      );
    }
  } finally {
    await Deno.remove(copy, { recursive: true });
  }
});
