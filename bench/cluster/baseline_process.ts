/**
 * The baseline client as a process of its own (issue #46 point 1: a fair yardstick): its own
 * connection to the API server, as the operator's user (its kubeconfig), with the operator's
 * concurrency, so that neither the bench's creating client nor its event loop is shared with it.
 * Started by `BaselineProcess.start`; it prints `listed` once every namespace's watch has listed,
 * and `{"writes":N}` when every payload is written, then exits.
 *
 *   deno run -A bench/cluster/baseline_process.ts '{"kubeconfig":…,"namespaces":[["ns",1000]],"rules":4,"width":2}'
 */
import { LiveCluster } from "../../src/kube/live_cluster.ts";
// The control plane's kubeconfigs are YAML.
import "../../src/kube/kubeconfig_yaml.ts";
import { REPO_ROOT } from "../../tools/operator/process.ts";
import { baselinePayloads, runBaseline } from "./baseline.ts";

/** What the process is told: where to connect, which namespaces to serve, how wide. */
export interface BaselineJob {
  kubeconfig: string;
  /** Namespaces and how many RateLimits each will hold. */
  namespaces: [string, number][];
  rules: number;
  /** Writes in flight at once in each namespace (the operator's concurrency). */
  width: number;
  /** A plain-HTTP API server (a test's). */
  allowInsecureHttp?: boolean;
}

/** A running baseline process. */
export class BaselineProcess {
  private constructor(
    private readonly child: Deno.ChildProcess,
    private readonly lines: AsyncIterator<string>,
  ) {}

  /** Process id (its CPU time is read from /proc like a subject's). */
  get pid(): number {
    return this.child.pid;
  }

  /** Starts the process and waits until its watches have listed. */
  static async start(job: BaselineJob): Promise<BaselineProcess> {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--frozen", "bench/cluster/baseline_process.ts", JSON.stringify(job)],
      cwd: REPO_ROOT,
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const lines = linesOf(child.stdout);
    const p = new BaselineProcess(child, lines);
    const first = await lines.next();
    if (first.value !== "listed") {
      await p.kill();
      throw new Error(`the baseline process did not list: ${first.value ?? "it exited"}`);
    }
    return p;
  }

  /** Waits until every payload is written; the writes it made. */
  async done(): Promise<number> {
    const line = await this.lines.next();
    const status = await this.child.status;
    if (!status.success || typeof line.value !== "string") {
      throw new Error(`the baseline process failed (exit ${status.code})`);
    }
    return (JSON.parse(line.value) as { writes: number }).writes;
  }

  /** Stops it at once (a failed run). */
  async kill(): Promise<void> {
    try {
      this.child.kill("SIGKILL");
    } catch { /* gone already */ }
    await this.child.status;
  }
}

/** The lines of `stream`, as they come. */
async function* linesOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    rest += chunk;
    for (let i = rest.indexOf("\n"); i >= 0; i = rest.indexOf("\n")) {
      yield rest.slice(0, i);
      rest = rest.slice(i + 1);
    }
  }
  if (rest) yield rest;
}

async function main(job: BaselineJob): Promise<void> {
  const api = LiveCluster.connect({
    kubeconfig: job.kubeconfig,
    requestTimeoutMs: 60_000,
    allowInsecureHttp: job.allowInsecureHttp === true,
  });
  // The payloads are computed before anything is created, as in-process.
  const work = job.namespaces.map(([ns, n]) => ({
    ns,
    payloads: baselinePayloads(n, job.rules, ns),
  }));
  let listed = 0;
  const stop = new AbortController();
  const writes = await Promise.all(
    work.map(({ ns, payloads }) =>
      runBaseline(api, ns, payloads, job.width, stop.signal, () => {
        if (++listed === work.length) console.log("listed");
      })
    ),
  );
  console.log(JSON.stringify({ writes: writes.reduce((a, b) => a + b, 0) }));
  Deno.exit(0);
}

if (import.meta.main) await main(JSON.parse(Deno.args[0]) as BaselineJob);
