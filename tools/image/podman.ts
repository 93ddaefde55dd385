/**
 * podman as the image build runs it: runc and the cgroupfs manager (no systemd, and crun cannot
 * start containers on every machine), no default rlimits (a container may not raise them where
 * the build runs unprivileged), storage in podman's default place. A containers.conf under
 * .cache/image says so, given to podman through CONTAINERS_CONF.
 */
import { join } from "node:path";
import { CACHE, type Say, step, type StepOptions } from "./run.ts";

/** podman's global flags for every call. */
export const PODMAN_FLAGS: readonly string[] = ["--cgroup-manager=cgroupfs", "--runtime=runc"];

const CONF = `# Written by tools/image/podman.ts.
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
`;

/** The containers.conf path (written when missing or different). */
export function containersConf(): string {
  const path = join(CACHE, "containers.conf");
  Deno.mkdirSync(CACHE, { recursive: true });
  let have = "";
  try {
    have = Deno.readTextFileSync(path);
  } catch {
    // Not written yet.
  }
  if (have !== CONF) Deno.writeTextFileSync(path, CONF);
  return path;
}

/** The environment podman runs with. */
export function podmanEnv(): Record<string, string> {
  return { CONTAINERS_CONF: containersConf() };
}

/** The outcome of a short podman call. */
export interface Outcome {
  success: boolean;
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a short podman command; throws on failure unless `check` is false. */
export async function podman(
  args: string[],
  o: { check?: boolean; stdin?: "null" | "inherit" } = {},
): Promise<Outcome> {
  const out = await new Deno.Command("podman", {
    args: [...PODMAN_FLAGS, ...args],
    env: podmanEnv(),
    stdin: o.stdin ?? "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  const r = {
    success: out.success,
    code: out.code,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
  };
  if (!r.success && o.check !== false) {
    throw new Error(`podman ${args.join(" ")} failed (exit ${r.code}):\n${r.stderr}`);
  }
  return r;
}

/** A long podman command as a build step (progress lines, a log). */
export function podmanStep(
  say: Say,
  label: string,
  args: string[],
  o: StepOptions = {},
): Promise<string> {
  return step(say, label, "podman", [...PODMAN_FLAGS, ...args], {
    ...o,
    env: { ...podmanEnv(), ...o.env },
  });
}

/** `podman run` as the Pods run an image: removed after, read-only root, uid 65532, no capabilities, no network. */
export const RESTRICTED_RUN: readonly string[] = [
  "run",
  "--rm",
  "--read-only",
  "--user=65532:65532",
  "--cap-drop=ALL",
  "--network=none",
];

/** Saves `ref` as a docker archive at `archive` (what containerd's `ctr images import` reads). */
export async function saveImage(say: Say, ref: string, archive: string): Promise<void> {
  // Saved beside it and renamed over it: a test loading the archive into a node meanwhile (tests
  // run in lanes) reads the old file or the new one, never a half-written or missing one.
  const partial = `${archive}.${crypto.randomUUID().slice(0, 8)}.partial`;
  try {
    await podmanStep(say, `podman save ${archive}`, [
      "save",
      "--format=docker-archive",
      "--output",
      partial,
      ref,
    ]);
    await Deno.rename(partial, archive);
  } finally {
    await Deno.remove(partial).catch(() => {});
  }
}
