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

/** Runs `kubectl --kubeconfig=<kubeconfig> ...args`; never throws on a non-zero exit. */
export async function runKubectl(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  opts: KubectlOptions = {},
): Promise<KubectlResult> {
  const child = new Deno.Command(kubectl, {
    args: [
      `--kubeconfig=${opts.kubeconfig ?? kubeconfig}`,
      `--cache-dir=${join(dirname(kubeconfig), "internal", "kube-cache")}`,
      ...args,
    ],
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(opts.timeoutMs ?? 120_000),
  }).spawn();
  if (opts.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(opts.stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
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
