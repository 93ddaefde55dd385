/**
 * Regenerates `tools/cluster/go/k8s/go.mod` for another Kubernetes version: derives the staging
 * modules from k8s.io/kubernetes's own go.mod (`go mod download -json`), writes one replace line
 * per staging module, then runs `go mod tidy`.
 *
 *   deno run -A tools/cluster/gomod.ts v1.34.10
 *
 * @module
 */
import { join } from "node:path";
import { goEnv } from "./build.ts";
import { GO_DIR } from "./paths.ts";

async function go(args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command("go", { args, cwd, env: goEnv() }).output();
  const dec = new TextDecoder();
  if (!out.success) throw new Error(`go ${args.join(" ")}:\n${dec.decode(out.stderr)}`);
  return dec.decode(out.stdout);
}

/** Staging module names (`api`, `client-go`, ...) replaced in k8s.io/kubernetes@`version`. */
export async function stagingModules(version: string): Promise<string[]> {
  const info = JSON.parse(
    await go(["mod", "download", "-json", `k8s.io/kubernetes@${version}`], GO_DIR),
  ) as {
    GoMod?: string;
    Error?: string;
  };
  if (!info.GoMod) throw new Error(info.Error ?? "no GoMod in go mod download output");
  const gomod = await Deno.readTextFile(info.GoMod);
  return [...gomod.matchAll(/=>\s*\.\/staging\/src\/k8s\.io\/([a-z0-9-]+)/g)].map((m) => m[1]);
}

/** The wrapper go.mod text for `version` (e.g. `v1.34.10`). */
export function renderGoMod(version: string, staging: string[]): string {
  const lib = version.replace(/^v1\./, "v0.");
  return [
    "// Wrapper module that builds the Kubernetes control-plane binaries from k8s.io/kubernetes.",
    "// Regenerate with `deno run -A tools/cluster/gomod.ts <version>` when changing the version.",
    "module cluster.local/tools/k8s",
    "",
    "go 1.24.0",
    "",
    "godebug default=go1.24",
    "",
    `require k8s.io/kubernetes ${version}`,
    "",
    "replace (",
    ...staging.map((m) => `\tk8s.io/${m} => k8s.io/${m} ${lib}`),
    ")",
    "",
  ].join("\n");
}

if (import.meta.main) {
  const version = Deno.args[0];
  if (!/^v1\.\d+\.\d+$/.test(version ?? "")) {
    console.error("usage: gomod.ts v1.MINOR.PATCH");
    Deno.exit(2);
  }
  const dir = join(GO_DIR, "k8s");
  const staging = await stagingModules(version);
  await Deno.writeTextFile(join(dir, "go.mod"), renderGoMod(version, staging));
  await Deno.remove(join(dir, "go.sum")).catch(() => {});
  await go(["mod", "tidy"], dir);
  console.log(`k8s wrapper now at ${version} with ${staging.length} staging replaces`);
}
