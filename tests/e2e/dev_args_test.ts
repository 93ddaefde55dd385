/**
 * `./deno task dev` before it starts anything: `--help` prints help and starts nothing, a bad
 * operator flag is a one-line usage error, and a second `dev` refuses while one runs, naming its
 * pid and how to stop it. No control plane is built or started here: the cache is a temp dir.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { tryLock } from "../../tools/lock.ts";
import { REPO_ROOT } from "../../tools/operator/process.ts";

async function dev(args: string[], cache: string) {
  const r = await new Deno.Command(join(REPO_ROOT, "deno"), {
    args: ["run", "-A", "--frozen", "tools/dev.ts", ...args],
    cwd: REPO_ROOT,
    env: { CLUSTER_CACHE_DIR: cache },
    stdout: "piped",
    stderr: "piped",
    // Each case answers at once; one that goes on to start a cluster is a failure, not a wait.
    signal: AbortSignal.timeout(30_000),
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trimEnd();
  return { code: r.code, out: text(r.stdout), err: text(r.stderr) };
}

async function entries(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) names.push(e.name);
  return names.sort();
}

Deno.test("dev --help and -h print the help on stdout and start nothing", async () => {
  const cache = await Deno.makeTempDir();
  try {
    for (const flag of ["--help", "-h"]) {
      const r = await dev([flag, "--real-node"], cache);
      assert.deepEqual([r.code, r.err], [0, ""]);
      assert.match(r.out, /^Usage: deno task dev \[--real-node\] \[operator flags\]\n/);
      assert.match(r.out, /a second one refuses/);
    }
    assert.deepEqual(await entries(cache), [], "nothing built, started or locked");
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("dev with a bad operator flag: one line, exit 2, nothing started", async () => {
  const cache = await Deno.makeTempDir();
  try {
    const r = await dev(["--log-levl=debug"], cache);
    assert.deepEqual(r, {
      code: 2,
      out: "",
      err:
        "error: operator flags: unknown flag --log-levl; did you mean --log-level? See 'deno task dev --help'.",
    });
    assert.deepEqual(await entries(cache), []);
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("a second dev refuses while one runs: names its pid and how to stop it, touches nothing", async () => {
  const cache = await Deno.makeTempDir();
  // The running dev: any live process holding the lock.
  const first = new Deno.Command("sleep", { args: ["120"] }).spawn();
  try {
    await Deno.mkdir(join(cache, "dev.lock"));
    await Deno.writeTextFile(join(cache, "dev.lock", "pid"), String(first.pid));
    const r = await dev([], cache);
    assert.equal(r.code, 1, r.err);
    assert.equal(r.out, "");
    assert.equal(r.err.split("\n").length, 1, r.err);
    assert.match(
      r.err,
      new RegExp(`^error: another \`deno task dev\` runs the cluster in .*\\(pid ${first.pid}\\)`),
    );
    assert.match(r.err, new RegExp(`Ctrl-C in its terminal or \`kill ${first.pid}\``));
    assert.deepEqual(await entries(cache), ["dev.lock"], "no cluster started or removed");
    assert.equal(await Deno.readTextFile(join(cache, "dev.lock", "pid")), String(first.pid));
  } finally {
    first.kill();
    await first.status;
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("the dev lock: refused while its holder lives, taken over once it is dead, freed on release", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "dev.lock");
  try {
    const mine = await tryLock(path);
    assert.ok(mine.held);
    assert.deepEqual(await tryLock(path), { held: false, owner: Deno.pid });
    await mine.release();
    const dead = new Deno.Command("true").spawn();
    await dead.status;
    await Deno.mkdir(path);
    await Deno.writeTextFile(join(path, "pid"), String(dead.pid));
    const again = await tryLock(path);
    assert.ok(again.held, "a dead holder's lock is taken over");
    assert.equal(await Deno.readTextFile(join(path, "pid")), String(Deno.pid));
    await again.release();
    assert.deepEqual(await entries(dir), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
