/**
 * Leaves the SQLite caches in DENO_DIR (module and npm analysis) readable on the Pod's read-only
 * root filesystem. Deno keeps them in WAL mode, and SQLite opens a WAL database read-only only when
 * its `-wal` and `-shm` files exist; the last connection to close removes them. Without them Deno
 * falls back to empty in-memory caches and analyses every module again at each start, which left
 * the operator's module graph holding about 8 MB more resident memory in the image than from the
 * repository (bench/RESULTS.md). Empty files are what a checkpointed database has: no frames.
 *
 * The image's build stage runs it last, with a DENO_DIR of its own so that its own run opens none
 * of the caches it seals: `deno run --allow-read=DIR --allow-write=DIR seal_cache.ts DIR`.
 */
const dir = Deno.args[0];
if (!dir) throw new Error("usage: seal_cache.ts DENO_DIR");

const sealed: string[] = [];
for (const entry of Deno.readDirSync(dir)) {
  // The cache databases: `dep_analysis_cache_v2`, `node_analysis_cache_v2`, … (no extension).
  if (!entry.isFile || !/^[a-z0-9_]+_v\d+$/.test(entry.name)) continue;
  for (const suffix of ["-wal", "-shm"]) {
    const path = `${dir}/${entry.name}${suffix}`;
    // A -wal with frames would hold writes not yet in the database: never truncate one.
    const file = Deno.openSync(path, { write: true, create: true });
    file.close();
  }
  sealed.push(entry.name);
}
if (!sealed.length) throw new Error(`no cache database in ${dir}`);
console.log(`sealed ${sealed.sort().join(", ")}`);
