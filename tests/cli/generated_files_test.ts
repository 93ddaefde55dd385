/**
 * Check or write generated files (src/cli/generated_files.ts), as `crds`, `deploy` and
 * `module-crds` do: a check names each missing or differing file with its first differing line
 * and writes nothing; a write makes folders and writes only the stale files.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { checkOrWrite, GeneratedFileError, staleFiles } from "../../src/cli/generated_files.ts";

Deno.test("staleFiles names missing and changed files with the first differing line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "a.yaml"), "x\nY\n");
    await Deno.writeTextFile(join(dir, "c.yaml"), "same\n");
    await Deno.writeTextFile(join(dir, "d.yaml"), "x\n");
    const files = [
      { path: join(dir, "a.yaml"), text: "x\ny\n" },
      { path: join(dir, "b.yaml"), text: "z\n" },
      { path: join(dir, "c.yaml"), text: "same\n" },
      { path: join(dir, "d.yaml"), text: "x\ny\n" },
    ];
    assert.deepEqual(await staleFiles(files), [
      { path: join(dir, "a.yaml"), why: 'line 2 differs: expected "y", found "Y"' },
      { path: join(dir, "b.yaml"), why: "missing" },
      { path: join(dir, "d.yaml"), why: 'line 2 differs: expected "y", found ""' },
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkOrWrite: a check writes nothing; a write makes folders, writes only stale files, then none is stale", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const same = join(dir, "same.txt");
    await Deno.writeTextFile(same, "kept\n");
    const before = (await Deno.stat(same)).mtime;
    const files = [
      { path: join(dir, "sub", "new.txt"), text: "new\n" },
      { path: same, text: "kept\n" },
    ];
    const checked = await checkOrWrite(files, true);
    assert.deepEqual(checked.map((s) => s.path), [files[0].path]);
    await assert.rejects(Deno.stat(join(dir, "sub")), Deno.errors.NotFound, "check wrote nothing");
    await new Promise((r) => setTimeout(r, 20));
    const written = await checkOrWrite(files, false);
    assert.deepEqual(written, checked, "a write reports what it wrote");
    assert.equal(await Deno.readTextFile(files[0].path), "new\n");
    assert.deepEqual((await Deno.stat(same)).mtime, before, "a current file is not touched");
    assert.deepEqual(await checkOrWrite(files, true), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** `mod.ts <command> ...args`: its exit code and stderr. */
async function command(...args: string[]): Promise<{ code: number; err: string }> {
  const root = new URL("../../", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--frozen", "--cached-only", "mod.ts", ...args],
    cwd: root,
    stdout: "null",
    stderr: "piped",
  }).output();
  return { code: out.code, err: new TextDecoder().decode(out.stderr).trim() };
}

Deno.test("a file or folder that cannot be read or written is one line, exit 1, not a stack trace", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // kustomization.yaml a folder: reading it fails with IsADirectory.
    await Deno.mkdir(join(dir, "kustomization.yaml"));
    await assert.rejects(
      checkOrWrite([{ path: join(dir, "kustomization.yaml"), text: "x\n" }], true),
      (err: Error) =>
        err instanceof GeneratedFileError &&
        err.message.startsWith(`cannot read ${join(dir, "kustomization.yaml")}: Is a directory`),
    );
    for (const args of [["crds", "--check", "--dir", dir], ["crds", "--dir", dir]]) {
      const r = await command(...args);
      assert.equal(r.code, 1, r.err);
      assert.match(r.err, /^crds: cannot read .*kustomization\.yaml: Is a directory[^\n]*$/);
    }
    // Under /proc nothing can be made: the write fails with NotFound.
    const r = await command("crds", "--dir", "/proc/nope");
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /^crds: cannot write \/proc\/nope\/[^\n]*No such file or directory[^\n]*$/);
    const d = await command("deploy", "--dir", dir);
    assert.equal(d.code, 1, d.err);
    assert.match(d.err, /^deploy: Is a directory[^\n]*kustomization\.yaml'$/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
