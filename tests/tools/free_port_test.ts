/**
 * Ports handed out by the test tools are claimed machine-wide: a port one process handed out is not
 * handed out by another for ten minutes, though nothing listens on it yet (CI's istiod failed to
 * bind an xDS port another lane had probed free and handed out meanwhile).
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const processes = fileURLToPath(new URL("../../tools/processes.ts", import.meta.url));
const deno = Deno.execPath();

/** Runs `code` (with `claimPort` and `freePort` in scope) in its own process; returns its stdout. */
async function inProcess(tmp: string, code: string): Promise<string> {
  const script = `import { claimPort, freePort } from ${JSON.stringify(processes)};\n${code}`;
  const out = await new Deno.Command(deno, {
    args: ["eval", "--no-lock", script],
    env: { TMPDIR: tmp },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim();
}

Deno.test("a port claimed by one process is not handed out by another for ten minutes", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const port = Number(await inProcess(tmp, "console.log(freePort());"));
    assert.ok(port >= 20_000);
    // Nothing listens on it, yet another process may not have it.
    assert.equal(await inProcess(tmp, `console.log(claimPort(${port}));`), "false");
    // Ten minutes on, the claim is stale and the port may be claimed again.
    const later = Date.now() + 10 * 60_000 + 1_000;
    assert.equal(await inProcess(tmp, `console.log(claimPort(${port}, ${later}));`), "true");
    // Renewed: stale no more.
    assert.equal(await inProcess(tmp, `console.log(claimPort(${port}));`), "false");
    const claims = [...Deno.readDirSync(`${tmp}/platform-operator-ports`)].map((e) => e.name);
    assert.deepEqual(claims, [String(port)]);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("ports handed out in two processes at once are distinct", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const draw = "console.log(JSON.stringify(Array.from({ length: 400 }, () => freePort())));";
    const [a, b] = await Promise.all([inProcess(tmp, draw), inProcess(tmp, draw)]);
    const ports = [...JSON.parse(a), ...JSON.parse(b)] as number[];
    assert.equal(new Set(ports).size, 800);
    assert.equal([...Deno.readDirSync(`${tmp}/platform-operator-ports`)].length, 800);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
