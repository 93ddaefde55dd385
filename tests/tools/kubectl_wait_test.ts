/**
 * tools/cluster/kubectl.ts runs a `kubectl wait` again when it failed only because a condition
 * list was still null (a CRD just applied), and nothing else: a stand-in kubectl (a shell script)
 * fails the first calls with kubectl's own message.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { NULL_CONDITIONS, runKubectl } from "../../tools/cluster/kubectl.ts";

const NULL_MESSAGE =
  ".status.conditions accessor error: <nil> is of the type <nil>, expected []interface{}";

/**
 * A kubectl stand-in that fails its first `failures` calls with `message`, then succeeds (or, with
 * `thenHang`, hangs for a minute); counts its calls.
 */
async function standIn(failures: number, message: string, thenHang = false) {
  const dir = await Deno.makeTempDir();
  const count = join(dir, "count");
  const bin = join(dir, "kubectl");
  await Deno.writeTextFile(
    bin,
    `#!/bin/sh
n=$(cat '${count}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '${count}'
if [ $n -le ${failures} ]; then echo '${message}' >&2; exit 1; fi
${thenHang ? "exec sleep 60" : ""}
echo "customresourcedefinition.apiextensions.k8s.io/x condition met"
`,
  );
  await Deno.chmod(bin, 0o755);
  return {
    run: (args: string[], timeoutMs = 10_000) =>
      runKubectl(bin, join(dir, "kubeconfig"), args, { timeoutMs }),
    calls: async () => Number((await Deno.readTextFile(count)).trim()),
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

Deno.test("kubectl's message for a null condition list is the one matched", () => {
  assert.match(`error: ${NULL_MESSAGE}`, NULL_CONDITIONS);
  assert.doesNotMatch("error: timed out waiting for the condition on crd/x", NULL_CONDITIONS);
});

Deno.test("a wait that meets a null condition list is run again until it passes", async () => {
  await using k = await standIn(2, `error: ${NULL_MESSAGE}`);
  const r = await k.run(["wait", "--for=condition=Established", "crd/x"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /condition met/);
  assert.equal(await k.calls(), 3);
});

Deno.test("other failures, and other commands, are answered at once", async () => {
  {
    await using k = await standIn(5, "error: timed out waiting for the condition on crd/x");
    const r = await k.run(["wait", "--for=condition=Established", "crd/x"]);
    assert.equal(r.code, 1);
    assert.equal(await k.calls(), 1);
  }
  {
    await using k = await standIn(5, `error: ${NULL_MESSAGE}`);
    const r = await k.run(["get", "crd/x"]);
    assert.equal(r.code, 1);
    assert.equal(await k.calls(), 1);
  }
});

Deno.test("a condition list still null at the time limit is the failure returned", async () => {
  await using k = await standIn(1_000, `error: ${NULL_MESSAGE}`);
  const r = await k.run(["wait", "--for=condition=Established", "crd/x"], 2_000);
  assert.equal(r.code, 1);
  assert.match(r.stderr, NULL_CONDITIONS);
  // Every 200 ms: at most 11 calls in 2 s; at least 2 even on a loaded machine.
  const calls = await k.calls();
  assert.ok(calls >= 2 && calls <= 11, `${calls} calls within 2 s`);
});

Deno.test("a run again killed at the time limit returns the null list seen before it", async () => {
  // Under load the last run again may be given too little of the limit to finish: its kill
  // (exit 143, nothing said) is not the failure; the null condition list seen before it is.
  await using k = await standIn(1, `error: ${NULL_MESSAGE}`, true);
  const r = await k.run(["wait", "--for=condition=Established", "crd/x"], 1_000);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, NULL_CONDITIONS);
  assert.equal(await k.calls(), 2);
});
