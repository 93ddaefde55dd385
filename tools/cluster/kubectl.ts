/** Runs the built kubectl against a kubeconfig. */
import { dirname, join } from "node:path";

/** Result of one kubectl invocation. */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of one kubectl invocation. */
export interface KubectlOptions {
  /** Text fed to stdin (e.g. manifests for `apply -f -`). */
  stdin?: string;
  /** Kubeconfig to use instead of the admin one. */
  kubeconfig?: string;
  /** Kill kubectl after this many milliseconds (default 120 s). */
  timeoutMs?: number;
}

/**
 * What `kubectl wait --for=condition=...` prints, exiting 1 at once instead of waiting, when an
 * object it waits for has `status.conditions: null`: a CustomResourceDefinition just applied does,
 * for an instant, before the API server sets its first conditions (kubectl's ConditionalWait reads
 * the field as a list; pingcap/tidb-operator#1511 met the same on `Established`).
 */
export const NULL_CONDITIONS = /\.status\.conditions accessor error: <nil> is of the type <nil>/;

/**
 * Runs `kubectl --kubeconfig=<kubeconfig> ...args`; never throws on a non-zero exit. A `wait`
 * that fails only because a condition list is still null (NULL_CONDITIONS) is run again, every
 * 200 ms, within the same time limit: the condition has not been seen to fail, only not yet set.
 */
export async function runKubectl(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  opts: KubectlOptions = {},
): Promise<KubectlResult> {
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  let nullSeen: KubectlResult | undefined;
  for (;;) {
    const { result: r, killed } = await runOnce(kubectl, kubeconfig, args, {
      ...opts,
      timeoutMs: Math.max(1, deadline - Date.now()),
    });
    // A run again killed at the time limit has said nothing: the null list is what was seen.
    if (killed && nullSeen) return nullSeen;
    if (r.code === 0 || args[0] !== "wait" || !NULL_CONDITIONS.test(r.stderr)) return r;
    nullSeen = r;
    if (Date.now() + 200 >= deadline) return r;
    await new Promise((res) => setTimeout(res, 200));
  }
}

async function runOnce(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  opts: KubectlOptions,
): Promise<{ result: KubectlResult; killed: boolean }> {
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 120_000);
  const child = new Deno.Command(kubectl, {
    args: [
      `--kubeconfig=${opts.kubeconfig ?? kubeconfig}`,
      `--cache-dir=${join(dirname(kubeconfig), "internal", "kube-cache")}`,
      ...args,
    ],
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal,
  }).spawn();
  if (opts.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(opts.stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return {
    result: { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) },
    killed: signal.aborted && !out.success,
  };
}

/** Like {@link runKubectl} but throws (with stderr) on a non-zero exit; returns stdout. */
export async function mustKubectl(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  opts: KubectlOptions = {},
): Promise<string> {
  const r = await runKubectl(kubectl, kubeconfig, args, opts);
  if (r.code !== 0) {
    throw new Error(`kubectl ${args.join(" ")} exited ${r.code}:\n${r.stderr}${r.stdout}`);
  }
  return r.stdout;
}
