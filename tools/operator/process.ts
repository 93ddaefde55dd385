/**
 * The operator under test as its own OS process: `deno run -A --frozen src/cli/operator_main.ts run
 * ...`, exactly what `deno task start` runs (the compiled binary's entry: `mod.ts run` without the
 * library and the other commands), with its JSON logs captured to a file.
 */
import { join } from "node:path";
import { freePort, isAlive } from "../processes.ts";
import { MESH_ROOT_NAMESPACE } from "../cluster/mesh.ts";
import { CRD_KUSTOMIZATION } from "../../src/crd/render.ts";
import { containerLaunch } from "./container.ts";

/** Repository root (the operator is started from here). */
export const REPO_ROOT: string = join(import.meta.dirname ?? ".", "..", "..");

/** How to start one operator replica. */
export interface OperatorOptions {
  /** Kubeconfig the operator uses (the cluster's `platform-operator` user). */
  kubeconfig: string;
  /** Leader-election identity and the name used in log file names. */
  identity: string;
  /** Directory the log file goes to. */
  logDir: string;
  /** Run with `--leader-elect` (default false: a single replica needs no Lease). */
  leaderElect?: boolean;
  /** Namespace of the leader-election Lease (default: the operator's own default). */
  leaseNamespace?: string;
  /** `--log-level` (default `debug`, so a failing test has something to read). */
  logLevel?: string;
  /** More flags, appended as given. */
  extraArgs?: string[];
  /** The tree to run `mod.ts` from (default: this repository), e.g. an older commit's. */
  root?: string;
  /** Flags for Deno itself (before the script), e.g. `--v8-flags=...`. */
  denoArgs?: string[];
  /** More environment variables for the process. */
  env?: Record<string, string>;
  /** Run the operator in this image (container.ts) instead of from the tree. */
  image?: string;
}

let started = 0;

/**
 * The environment the operator's image sets (Dockerfile `ENV`) and `deno task start` sets too,
 * so tests, benchmarks and `deno task dev` run the operator as it is deployed. No update check:
 * `deno run`'s daily one fetches over TLS half a second after start, and whichever TLS client comes
 * first builds the process's root store (src/kube/trust.ts).
 */
export const OPERATOR_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: "1",
  DENO_NO_UPDATE_CHECK: "1",
};

/**
 * The flags of `deno run` that make it run the operator as the compiled binary does: no V8 code
 * cache (`deno task compile` builds with `--no-code-cache`; the cache also maps its database into
 * the process, about 1.5 MB of an idle operator), and V8's young generation capped at 1 MB a
 * semi-space instead of 16: at 4 MB, converging 1,000 RateLimits peaked at 87 MB instead of 149 MB
 * for the same CPU; at 1 MB the start-up's peak is 2.5 to 5.5 MB lower again, for the same start-up
 * time, while converging 1,000 RateLimits takes 5 to 17% more CPU than at 4 MB (bench/RESULTS.md,
 * peak memory and issue 46).
 */
export const OPERATOR_DENO_FLAGS: readonly string[] = [
  "--frozen",
  "--no-code-cache",
  "--v8-flags=--max-semi-space-size=1",
];

/** Where a replica of the operator answers and whom it talks to, for `mod.ts run`. */
export interface RunTarget {
  kubeconfig: string;
  identity: string;
  metricsAddr: string;
  probeAddr: string;
  /** Flags for Deno itself (before the script), e.g. `--v8-flags=...`. */
  denoArgs?: readonly string[];
}

/**
 * The `deno` arguments that run the operator as `t` (what `deno task start` runs: `mod.ts run` from the
 * compiled binary's entry), then `extra` flags.
 */
export function operatorRunArgs(t: RunTarget, extra: readonly string[] = []): string[] {
  return [
    "run",
    "-A",
    ...OPERATOR_DENO_FLAGS,
    ...(t.denoArgs ?? []),
    "src/cli/operator_main.ts",
    "run",
    `--kubeconfig=${t.kubeconfig}`,
    `--identity=${t.identity}`,
    `--metrics-addr=${t.metricsAddr}`,
    `--probe-addr=${t.probeAddr}`,
    // The local mesh's root namespace (Istio's would be istio-system).
    `--mesh-root-namespace=${MESH_ROOT_NAMESPACE}`,
    ...extra,
  ];
}

/** The `/metrics` text served at `addr` (host:port), or undefined when it does not answer. */
export async function scrapeMetrics(addr: string): Promise<string | undefined> {
  try {
    const res = await fetch(`http://${addr}/metrics`, { signal: AbortSignal.timeout(2000) });
    return res.ok ? await res.text() : (await res.body?.cancel(), undefined);
  } catch {
    return undefined;
  }
}

/** One running (or exited) operator process. */
export class OperatorProcess {
  /** When the process was spawned (epoch ms). */
  readonly startedAt = Date.now();
  /** Resolves with the exit status once the process is gone. */
  readonly exited: Promise<Deno.CommandStatus>;
  #child: Deno.ChildProcess;
  #containerPid: number | undefined;
  #logsDone: Promise<void>;

  private constructor(
    readonly identity: string,
    readonly logPath: string,
    readonly metricsAddr: string,
    readonly probeAddr: string,
    readonly args: string[],
    child: Deno.ChildProcess,
    logsDone: Promise<void>,
  ) {
    this.#child = child;
    this.#logsDone = logsDone;
    this.exited = child.status;
  }

  /** Spawns a replica; returns at once (see {@link waitServing}). */
  static async start(o: OperatorOptions): Promise<OperatorProcess> {
    await Deno.mkdir(o.logDir, { recursive: true });
    const logPath = join(o.logDir, `operator-${o.identity}-${++started}.log`);
    const metricsAddr = `127.0.0.1:${freePort()}`;
    const probeAddr = `127.0.0.1:${freePort()}`;
    const args = operatorRunArgs({
      kubeconfig: o.kubeconfig,
      identity: o.identity,
      metricsAddr,
      probeAddr,
      denoArgs: o.denoArgs,
    }, [
      `--log-level=${o.logLevel ?? "debug"}`,
      `--leader-elect=${o.leaderElect ?? false}`,
      ...(o.leaseNamespace ? [`--lease-namespace=${o.leaseNamespace}`] : []),
      ...(o.extraArgs ?? []),
      ...(Deno.env.get("E2E_OPERATOR_ARGS")?.split(" ").filter((a) => a) ?? []),
    ]);
    const file = await Deno.open(logPath, { create: true, append: true });
    const container = o.image
      ? await containerLaunch(o.image, `operator-${o.identity}-${started}`, o.kubeconfig, [
        ...args.slice(args.indexOf("src/cli/operator_main.ts") + 2),
      ])
      : undefined;
    const child = new Deno.Command(container?.command ?? Deno.execPath(), {
      args: container?.args ?? args,
      cwd: o.root ?? REPO_ROOT,
      env: { ...OPERATOR_ENV, NO_COLOR: "1", ...o.env, ...container?.env },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    await Deno.writeTextFile(`${logPath}.pid`, String(child.pid));
    // Both streams go to one file; writes are chained so chunks never interleave mid-chunk.
    let queue = Promise.resolve();
    const write = (chunk: Uint8Array) =>
      queue = queue.then(async () => {
        let off = 0;
        while (off < chunk.length) off += await file.write(chunk.subarray(off));
      });
    const pump = async (s: ReadableStream<Uint8Array>) => {
      for await (const chunk of s) await write(chunk);
    };
    const logsDone = Promise.all([pump(child.stdout), pump(child.stderr)])
      .then(() => queue)
      .catch(() => {})
      .finally(() => file.close());
    const op = new OperatorProcess(
      o.identity,
      logPath,
      metricsAddr,
      probeAddr,
      args,
      child,
      logsDone,
    );
    if (container) {
      op.#containerPid = await container.pid();
      op.exited.finally(() => container.cleanup());
    }
    return op;
  }

  /** The OS process id (in a container: the operator's, not podman's). */
  get pid(): number {
    return this.#containerPid ?? this.#child.pid;
  }

  /** True while the process runs. */
  get running(): boolean {
    return isAlive(this.#child.pid);
  }

  /** Sends `signal` (no-op when already gone). */
  kill(signal: Deno.Signal = "SIGKILL"): void {
    try {
      this.#child.kill(signal);
    } catch {
      // Already exited.
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit status once logs are flushed. */
  async stop(graceMs = 10_000): Promise<Deno.CommandStatus> {
    this.kill("SIGTERM");
    const timer = setTimeout(() => this.kill("SIGKILL"), graceMs);
    try {
      const status = await this.exited;
      await this.#logsDone;
      return status;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL and wait until it is gone. */
  async killNow(): Promise<void> {
    this.kill("SIGKILL");
    await this.exited;
    await this.#logsDone;
  }

  /** Polls `/readyz` until it answers 200 (caches synced; leading or standing by); fails early if the process dies. */
  async waitServing(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) {
        throw new Error(
          `operator ${this.identity} exited early; log tail:\n${await this.logTail()}`,
        );
      }
      try {
        const res = await fetch(`http://${this.probeAddr}/readyz`, {
          signal: AbortSignal.timeout(1000),
        });
        await res.body?.cancel();
        if (res.ok) return;
      } catch {
        // Not listening yet.
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(
      `operator ${this.identity} not ready at ${this.probeAddr}/readyz after ${timeoutMs} ms; log tail:\n${await this
        .logTail()}`,
    );
  }

  /** The `/metrics` text, or undefined when it does not answer. */
  metrics(): Promise<string | undefined> {
    return scrapeMetrics(this.metricsAddr);
  }

  /** Parsed JSON log lines written so far (non-JSON lines are returned as `{msg: line}`). */
  async logLines(): Promise<Record<string, unknown>[]> {
    const text = await Deno.readTextFile(this.logPath).catch(() => "");
    return text.split("\n").filter((l) => l.trim()).map((l) => {
      try {
        const v = JSON.parse(l);
        return typeof v === "object" && v !== null ? v as Record<string, unknown> : { msg: l };
      } catch {
        return { msg: l };
      }
    });
  }

  /** Last `lines` lines of the log. */
  async logTail(lines = 40): Promise<string> {
    const text = await Deno.readTextFile(this.logPath).catch(() => "");
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  }
}

/** Names of the CRDs in `crds/` and the YAML stream of all of them. */
export async function readCrds(): Promise<{ names: string[]; yaml: string }> {
  const dir = join(REPO_ROOT, "crds");
  const files: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && /\.ya?ml$/.test(e.name) && e.name !== CRD_KUSTOMIZATION) {
      files.push(join(dir, e.name));
    }
  }
  files.sort();
  const texts = await Promise.all(files.map((f) => Deno.readTextFile(f)));
  const names = texts.flatMap((t) =>
    [...t.matchAll(/^kind: CustomResourceDefinition\s*\nmetadata:\s*\n\s+name: (\S+)/gm)].map((m) =>
      m[1]
    )
  );
  return { names, yaml: texts.map((t) => t.trim()).join("\n---\n") + "\n" };
}
