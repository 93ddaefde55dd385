/**
 * A measurement, not a test: how long an edit of a ConfigMap takes to reach the file a Pod sees
 * in its ConfigMap volume, on the local control plane's real node (kubelet v1.34.10 as
 * tools/cluster/node/kubelet.ts configures it, `syncFrequency: 10s`). It is the delivery path the
 * engine's file configuration would have in Kubernetes (docs/global-engine.md, option (a)).
 * Starts its own cluster in `.cache/cluster/cm-delay-<pid>`, runs podcheck with the volume, edits
 * the ConfigMap `--edits` times (a random pause of up to 3 s between edits), reads the volume's
 * file from the kubelet's directory on the host every 50 ms, prints the delays in seconds as JSON
 * and takes the cluster down. Needs what the real node needs (root, containerd, runc, Go).
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { up } from "../cluster/mod.ts";
import { CACHE_DIR } from "../cluster/paths.ts";
import { podcheckPod } from "../cluster/real_node_fixtures.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The file `key` of ConfigMap volume `volume` under the kubelet's pods directory. */
async function volumeFile(root: string, volume: string, key: string): Promise<string | undefined> {
  const dirs = [root];
  while (dirs.length > 0) {
    const d = dirs.pop()!;
    for await (const e of Deno.readDir(d)) {
      const p = join(d, e.name);
      if (p.endsWith(`/kubernetes.io~configmap/${volume}/${key}`)) return p;
      if (e.isDirectory && !e.name.startsWith("..")) dirs.push(p);
    }
  }
  return undefined;
}

/** Measures `edits` ConfigMap edits; returns each one's delay in seconds. */
export async function measure(edits: number, log: (m: string) => void): Promise<number[]> {
  const dir = join(CACHE_DIR, `cm-delay-${Deno.pid}`);
  const c = await up({ dir, realNode: true, log });
  try {
    const node = c.realNode!;
    await node.loadImage(node.podcheckArchive);
    const ns = "cm-delay";
    const apply = async (manifest: unknown) => {
      const r = await c.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(manifest) });
      if (r.code !== 0) throw new Error(r.stderr);
    };
    const configMap = (v: number) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cfg", namespace: ns },
      data: { limit: String(v) },
    });
    await apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    await apply(configMap(0));
    const pod = JSON.parse(podcheckPod(c, ns, "reader"));
    pod.spec.volumes = [{ name: "cfg", configMap: { name: "cfg" } }];
    pod.spec.containers[0].volumeMounts = [{ name: "cfg", mountPath: "/config" }];
    await apply(pod);
    const ready = await c.kubectl([
      "-n",
      ns,
      "wait",
      "--for=condition=Ready",
      "--timeout=120s",
      "pod/reader",
    ]);
    if (ready.code !== 0) throw new Error(ready.stderr);
    const file = await volumeFile(join(dir, "node"), "cfg", "limit");
    if (!file) throw new Error(`no ConfigMap volume file under ${dir}/node`);
    const delays: number[] = [];
    for (let v = 1; v <= edits; v++) {
      const start = performance.now();
      await apply(configMap(v));
      while ((await Deno.readTextFile(file).catch(() => "")) !== String(v)) {
        if (performance.now() - start > 180_000) throw new Error(`edit ${v}: not there in 180 s`);
        await sleep(50);
      }
      delays.push(Math.round(performance.now() - start) / 1000);
      log(`edit ${v}: ${delays.at(-1)} s`);
      await sleep(Math.random() * 3000);
    }
    return delays;
  } finally {
    await c.down();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { edits: { type: "string" } } });
  const delays = await measure(Number(values.edits ?? 12), (m) => console.error(`[cm-delay] ${m}`));
  const sorted = [...delays].sort((a, b) => a - b);
  console.log(JSON.stringify({
    delays,
    p50: sorted[Math.floor(sorted.length / 2)],
    max: sorted.at(-1),
    over10s: delays.filter((d) => d > 10).length,
  }));
}
