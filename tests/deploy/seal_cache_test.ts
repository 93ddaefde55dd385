/** deploy/operator/seal_cache.ts: empty -wal and -shm beside each cache database, nothing lost. */
import assert from "node:assert/strict";
import { join } from "node:path";

const SCRIPT = new URL("../../deploy/operator/seal_cache.ts", import.meta.url).pathname;

async function seal(dir: string): Promise<Deno.CommandOutput> {
  return await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", `--allow-read=${dir}`, `--allow-write=${dir}`, SCRIPT, dir],
    stdout: "piped",
    stderr: "piped",
  }).output();
}

Deno.test("seal_cache: each database gets an empty -wal and -shm; a -wal with frames is kept", async () => {
  const dir = await Deno.makeTempDir({ prefix: "seal-cache-" });
  try {
    await Deno.writeTextFile(join(dir, "dep_analysis_cache_v2"), "db");
    await Deno.writeTextFile(join(dir, "node_analysis_cache_v2"), "db");
    await Deno.writeTextFile(join(dir, "node_analysis_cache_v2-wal"), "frames");
    await Deno.mkdir(join(dir, "npm"));
    const out = await seal(dir);
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    assert.equal(
      new TextDecoder().decode(out.stdout).trim(),
      "sealed dep_analysis_cache_v2, node_analysis_cache_v2",
    );
    const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assert.deepEqual(names, [
      "dep_analysis_cache_v2",
      "dep_analysis_cache_v2-shm",
      "dep_analysis_cache_v2-wal",
      "node_analysis_cache_v2",
      "node_analysis_cache_v2-shm",
      "node_analysis_cache_v2-wal",
      "npm",
    ]);
    assert.equal((await Deno.stat(join(dir, "dep_analysis_cache_v2-wal"))).size, 0);
    assert.equal(await Deno.readTextFile(join(dir, "node_analysis_cache_v2-wal")), "frames");
    assert.equal(await Deno.readTextFile(join(dir, "dep_analysis_cache_v2")), "db");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("seal_cache: a directory without a cache database is an error", async () => {
  const dir = await Deno.makeTempDir({ prefix: "seal-cache-" });
  try {
    const out = await seal(dir);
    assert.equal(out.success, false);
    assert.match(new TextDecoder().decode(out.stderr), /no cache database in /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
