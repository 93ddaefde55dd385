/**
 * `deno task dev [--real-node] [--mesh] [operator flags]` (`--help`: tools/dev_args.ts): the one
 * command that runs the project locally.
 * It builds the control plane (first time only), starts it, installs the CRDs, runs the operator
 * in the foreground (its JSON logs on stdout), applies the samples and prints kubectl lines to
 * try. `--real-node` adds a node that runs containers (tools/cluster/README.md) and prints how to
 * place a Pod there; `--mesh` a real istiod with Istio's own CRDs (docs/istiod.md) and prints its
 * addresses. Ctrl-C stops the operator and the cluster.
 */
import { dirname, join, resolve } from "node:path";
import { freePort } from "./processes.ts";
import { type ClusterHandle, down, ensureBuilt, type IstiodInfo, up } from "./cluster/mod.ts";
import { DEFAULT_CLUSTER_DIR } from "./cluster/paths.ts";
import { realNodeHowTo } from "./cluster/node/howto.ts";
import { OPERATOR_ENV, operatorRunArgs } from "./operator/process.ts";
import { busyMessage, DEV_HELP, DEV_LOCK, parseDevArgs } from "./dev_args.ts";
import { tryLock } from "./lock.ts";

const ROOT = resolve(import.meta.dirname ?? ".", "..");
const say = (msg: string) => console.error(`[dev] ${msg}`);

async function kubectl(cluster: ClusterHandle, args: string[]): Promise<void> {
  const r = await cluster.kubectl(args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed:\n${r.stderr}${r.stdout}`);
}

function startOperator(
  cluster: ClusterHandle,
  extra: string[],
): { child: Deno.ChildProcess; probe: string } {
  const probe = `127.0.0.1:${freePort()}`;
  const args = operatorRunArgs({
    kubeconfig: cluster.operatorKubeconfig,
    identity: "dev",
    metricsAddr: `127.0.0.1:${freePort()}`,
    probeAddr: probe,
  }, extra);
  say(`starting the operator: deno ${args.join(" ")}`);
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { ...OPERATOR_ENV },
    stdin: "null",
    stdout: "inherit",
    stderr: "piped",
  }).spawn();
  // The operator logs to stderr; here its JSON lines are the foreground output, on stdout.
  child.stderr.pipeTo(Deno.stdout.writable, { preventClose: true }).catch(() => {});
  return { child, probe };
}

async function waitServing(
  probe: string,
  child: Deno.ChildProcess,
  timeoutMs = 120_000,
): Promise<boolean> {
  let exited = false;
  child.status.then(() => exited = true);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !exited) {
    try {
      const res = await fetch(`http://${probe}/readyz`, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      if (res.ok) return true;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/** What `dev` prints once everything runs: the shell setup and kubectl lines to try. */
export function tryLines(cluster: Pick<ClusterHandle, "kubeconfig" | "kubectlPath">): string {
  const bin = dirname(cluster.kubectlPath);
  return [
    "",
    "Try it (in another terminal):",
    `  export KUBECONFIG=${cluster.kubeconfig} PATH=${bin}:$PATH`,
    "  kubectl get serverlesses,scalers -A",
    "  kubectl get ratelimits -A",
    "  kubectl get deployments -A -l app.kubernetes.io/managed-by=platform-operator",
    "  kubectl get envoyfilters -A -o yaml",
    "  kubectl get crd serverlesses.operator.platform-project.io -o yaml",
    `  kubectl apply -f ${join(ROOT, "samples")}/ -R   # change a sample and apply it again`,
    "",
    "Ctrl-C stops the operator and the cluster.",
    "",
  ].join("\n");
}

/** What `dev --mesh` prints about istiod: where it listens and how to ask it. */
export function istiodLines(istiod: IstiodInfo): string {
  const from = istiod.authSource ? ` (from ${istiod.authSource} to be authenticated as a Pod)` : "";
  return [
    "",
    `istiod ready in ${istiod.readySeconds.toFixed(1)} s:`,
    `  xDS (plaintext ADS)  ${istiod.xds}`,
    `  debug endpoints      ${istiod.debug}/debug/syncz${from}`,
    `  tokens               audience ${istiod.tokenAudience}; namespaces ${
      [istiod.rootNamespace, ...istiod.debugAllowedNamespaces].join(", ")
    } may read every endpoint`,
  ].join("\n");
}

/** Stops the operator (SIGTERM, SIGKILL after 10 s), then the cluster, then frees the lock; once. */
function stopper(release: () => Promise<void>): {
  stop(why: string): Promise<void>;
  operator?: Deno.ChildProcess;
} {
  let stopped: Promise<void> | undefined;
  const self: { stop(why: string): Promise<void>; operator?: Deno.ChildProcess } = {
    stop: (why) =>
      stopped ??= (async () => {
        say(`${why}: stopping the operator and the cluster`);
        const op = self.operator;
        if (op) {
          try {
            op.kill("SIGTERM");
          } catch { /* already gone */ }
          const killer = setTimeout(() => {
            try {
              op.kill("SIGKILL");
            } catch { /* gone */ }
          }, 10_000);
          await op.status;
          clearTimeout(killer);
        }
        await down(DEFAULT_CLUSTER_DIR);
        await release();
        say("stopped");
      })(),
  };
  return self;
}

async function main(args: string[]): Promise<number> {
  const parsed = parseDevArgs(args);
  if (parsed.kind === "help") {
    console.log(DEV_HELP);
    return 0;
  }
  if (parsed.kind === "error") {
    console.error(parsed.line);
    return 2;
  }
  const { realNode, mesh, operatorArgs: extra } = parsed;
  await Deno.mkdir(dirname(DEV_LOCK), { recursive: true });
  const lock = await tryLock(DEV_LOCK);
  if (!lock.held) {
    console.error(`error: ${busyMessage(lock.owner)}`);
    return 1;
  }
  const t0 = performance.now();
  const s = stopper(lock.release);
  // From the first moment: Ctrl-C during the build or start-up also stops what was started.
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(sig, () => s.stop(sig).then(() => Deno.exit(130)));
  }
  try {
    say("checking the control-plane binaries (the first run builds them from Go modules: minutes)");
    await ensureBuilt(say);
    const cluster = await up({ dir: DEFAULT_CLUSTER_DIR, log: say, realNode, mesh });
    await kubectl(cluster, ["apply", "--server-side", "-k", join(ROOT, "crds")]);
    await kubectl(cluster, [
      "wait",
      "--for=condition=Established",
      "--all",
      "crd",
      "--timeout=60s",
    ]);
    say("CRDs installed");
    const op = startOperator(cluster, extra);
    s.operator = op.child;
    if (!await waitServing(op.probe, op.child)) {
      throw new Error("the operator was not ready within 2 minutes (see its log above)");
    }
    await kubectl(cluster, ["apply", "-R", "-f", join(ROOT, "samples")]);
    say(`samples applied; ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    if (cluster.realNode) console.error(realNodeHowTo(cluster.realNode, cluster.dir));
    if (cluster.istiod) console.error(istiodLines(cluster.istiod));
    console.error(tryLines(cluster));
    const status = await op.child.status;
    await s.stop(`the operator exited with code ${status.code}`);
    return status.code === 0 ? 0 : 1;
  } catch (e) {
    console.error(`[dev] ${e instanceof Error ? e.message : e}`);
    await s.stop("error");
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
