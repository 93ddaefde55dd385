/**
 * The operator as its image runs it: `podman run` of the deno-runtime image (`./deno task image`)
 * as the Pod runs it (uid 65532, no capabilities, read-only root filesystem), on the host's network
 * so that the API server and the operator's ports stay on loopback, with its kubeconfig mounted
 * where the image may read it.
 */
import { join } from "node:path";
import { PODMAN_FLAGS, podmanEnv } from "../image/podman.ts";

/** How the Pod runs the image (deploy/operator's Deployment): what `podman run` is given too. */
export const RUN_AS_POD: readonly string[] = [
  "--user=65532:65532",
  "--cap-drop=ALL",
  "--security-opt=no-new-privileges",
];

/** What starts the operator in a container: the podman command, its environment, the name. */
export interface ContainerLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  name: string;
  /** The host pid of the operator in the container, once it runs. */
  pid(): Promise<number>;
  /** Removes the kubeconfig copy (after the container is gone). */
  cleanup(): Promise<void>;
}

/**
 * A `podman run` of `tag` with `runArgs` (the operator's own flags, after `run`), its kubeconfig
 * `kubeconfig` copied into a directory the container's user can read.
 */
export async function containerLaunch(
  tag: string,
  name: string,
  kubeconfig: string,
  runArgs: readonly string[],
): Promise<ContainerLaunch> {
  const dir = await Deno.makeTempDir({ prefix: "operator-kubeconfig-" });
  await Deno.copyFile(kubeconfig, join(dir, "kubeconfig"));
  await Deno.chmod(dir, 0o755);
  await Deno.chmod(join(dir, "kubeconfig"), 0o644);
  const flags = runArgs.map((a) =>
    a.startsWith("--kubeconfig=") ? "--kubeconfig=/etc/platform-operator/kubeconfig" : a
  );
  const env = podmanEnv();
  return {
    command: "podman",
    args: [
      ...PODMAN_FLAGS,
      "run",
      "--rm",
      `--name=${name}`,
      ...RUN_AS_POD,
      "--read-only",
      "--network=host",
      `--volume=${dir}:/etc/platform-operator:ro`,
      tag,
      ...flags,
    ],
    env,
    name,
    async pid() {
      for (let i = 0; i < 300; i++) {
        const out = await new Deno.Command("podman", {
          args: [...PODMAN_FLAGS, "inspect", "--format", "{{.State.Pid}}", name],
          env,
          stderr: "null",
        }).output();
        const pid = Number(new TextDecoder().decode(out.stdout).trim());
        if (out.success && pid > 0) return pid;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`container ${name}: no running process after 30 s`);
    },
    async cleanup() {
      // A podman killed with SIGKILL leaves its container running.
      await new Deno.Command("podman", {
        args: [...PODMAN_FLAGS, "rm", "-f", name],
        env,
        stdout: "null",
        stderr: "null",
      }).output().catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
