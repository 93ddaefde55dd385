/**
 * The real node's containerd: a configuration of its own (root, state, socket, CNI and runc
 * directories under the cluster directory, so it never meets another containerd on the machine),
 * the checks that the Debian programs are there, and `ctr` calls (import, list).
 */
import { dirname } from "node:path";
import { exists } from "../../files.ts";
import { type HostPrograms, INSTALL_HINT, type NodeLayout } from "./layout.ts";

/** Throws, naming every missing program and the package command, unless all are executable. */
export async function checkPrograms(p: HostPrograms): Promise<void> {
  const missing: string[] = [];
  const need: [string, string][] = [
    ["containerd", p.containerd],
    ["ctr (containerd's client)", p.ctr],
    ["containerd-shim-runc-v2", p.shim],
    ["runc", p.runc],
    ...["bridge", "host-local", "loopback"].map((n): [string, string] => [
      `the CNI plugin ${n}`,
      `${p.cniBinDir}/${n}`,
    ]),
  ];
  for (const [what, path] of need) {
    const info = await Deno.stat(path).catch(() => null);
    if (!info?.isFile || ((info.mode ?? 0) & 0o111) === 0) missing.push(`${what} (${path})`);
  }
  if (missing.length > 0) {
    throw new Error(
      `the real node cannot start: missing ${missing.join(", ")}. Install with: ${INSTALL_HINT}`,
    );
  }
}

/** containerd's config (version 2, as containerd 1.6 reads it) for the real node. */
export function containerdConfig(l: NodeLayout, p: HostPrograms, sandboxImage: string): string {
  const q = JSON.stringify; // TOML basic strings escape as JSON strings do
  const cri = `[plugins."io.containerd.grpc.v1.cri"`;
  return `version = 2
root = ${q(l.containerdRoot)}
state = ${q(l.containerdState)}
# Snapshotters and tracing this node never uses: fewer plugins, quieter logs.
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = ${q(l.socket)}

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(`${l.containerdRoot}/opt`)}

${cri}]
  sandbox_image = ${q(sandboxImage)}
  # Port 0: each node's streaming server (exec, attach) on a free loopback port.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Pods may not ask for a lower OOM score than containerd's own (not allowed here anyway).
  restrict_oom_score_adj = true
  disable_apparmor = true

${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

${cri}.containerd.runtimes.runc.options]
  BinaryName = ${q(p.runc)}
  Root = ${q(l.runcRoot)}
  SystemdCgroup = false

${cri}.cni]
  bin_dir = ${q(p.cniBinDir)}
  conf_dir = ${q(l.cniConfDir)}
  max_conf_num = 1
`;
}

/** A loopback port where nothing listens: the node's "registry proxy". */
export const NO_REGISTRY = "http://127.0.0.1:9";

/**
 * containerd's environment: PATH finds the shim (Debian's is beside containerd), and every image
 * pull goes to a proxy on loopback that is never there, so a Pod naming an image that was not
 * loaded fails at once (ErrImagePull naming 127.0.0.1:9), and no pull leaves the machine.
 */
export function containerdEnv(p: HostPrograms): Record<string, string> {
  const dirs = [dirname(p.shim), dirname(p.runc), "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
  const proxy = { HTTP_PROXY: NO_REGISTRY, HTTPS_PROXY: NO_REGISTRY, NO_PROXY: "" };
  const lower = { http_proxy: NO_REGISTRY, https_proxy: NO_REGISTRY, no_proxy: "" };
  return { PATH: [...new Set(dirs)].join(":"), ...proxy, ...lower };
}

/** Result of one `ctr` run. */
export interface CtrResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

/** Runs `ctr --address <socket> --namespace k8s.io ...args` (killed after `timeoutMs`). */
export async function ctr(
  p: HostPrograms,
  l: NodeLayout,
  args: string[],
  timeoutMs = 60_000,
): Promise<CtrResult> {
  const out = await new Deno.Command(p.ctr, {
    args: ["--address", l.socket, "--namespace", "k8s.io", ...args],
    stdin: "null",
    signal: AbortSignal.timeout(timeoutMs),
  }).output();
  const dec = new TextDecoder();
  return { ok: out.success, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Waits until containerd answers on its socket; throws with the log's tail otherwise. */
export async function waitContainerd(
  p: HostPrograms,
  l: NodeLayout,
  alive: () => boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && alive()) {
    if (await exists(l.socket) && (await ctr(p, l, ["version"], 5_000)).ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    alive()
      ? `containerd did not answer on ${l.socket} within ${timeoutMs / 1000} s`
      : "containerd exited",
  );
}

/**
 * Imports an image archive (OCI layout or `docker save`/`podman save` format) into the node's
 * containerd, unpacked for the CRI; returns the image names it added.
 */
export async function importImage(
  p: HostPrograms,
  l: NodeLayout,
  archive: string,
): Promise<string[]> {
  if (!await exists(archive)) throw new Error(`cannot load image: ${archive} does not exist`);
  const r = await ctr(p, l, ["images", "import", archive], 300_000)
    .catch((e) => ({ ok: false, stdout: "", stderr: String(e) }));
  if (!r.ok) {
    throw new Error(`ctr images import ${archive} failed: ${r.stderr.trim() || r.stdout.trim()}`);
  }
  // ctr prints "unpacking <name> (sha256:...)...done" per image.
  const names = [...r.stdout.matchAll(/unpacking (\S+) \(sha256:/g)].map((m) => m[1]);
  if (names.length === 0) {
    throw new Error(`ctr images import ${archive} added no image:\n${r.stdout}${r.stderr}`);
  }
  return names;
}

/** Gives the node's image `from` the further name `to` (a tag, as a rebuilt image would have). */
export async function tagImage(
  p: HostPrograms,
  l: NodeLayout,
  from: string,
  to: string,
): Promise<void> {
  const r = await ctr(p, l, ["images", "tag", "--force", from, to], 60_000)
    .catch((e) => ({ ok: false, stdout: "", stderr: String(e) }));
  if (!r.ok) throw new Error(`ctr images tag ${from} ${to} failed: ${r.stderr.trim() || r.stdout}`);
}

/** Network namespace paths of the node's Pod sandboxes (for `down` to remove). */
export async function sandboxNetns(p: HostPrograms, l: NodeLayout): Promise<string[]> {
  const ids = await ctr(p, l, ["containers", "list", "--quiet"], 20_000);
  if (!ids.ok) return [];
  const paths: string[] = [];
  for (const id of ids.stdout.split("\n").filter(Boolean)) {
    const info = await ctr(p, l, ["containers", "info", id], 20_000);
    if (!info.ok) continue;
    const spec = (JSON.parse(info.stdout) as {
      Spec?: { linux?: { namespaces?: { type: string; path?: string }[] } };
    }).Spec;
    const ns = spec?.linux?.namespaces?.find((n) => n.type === "network")?.path;
    if (ns && ns.startsWith("/var/run/netns/")) paths.push(ns);
  }
  return [...new Set(paths)];
}
