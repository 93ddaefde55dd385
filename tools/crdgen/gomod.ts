/**
 * Moves the generator to another KEDA release: its go.mod requires that KEDA, the controller-tools
 * KEDA's go.mod requires, and carries KEDA's replace block (KEDA pins the Kubernetes modules there;
 * a dependency's replaces do not apply to its users, so without them the Job template in ScaledJob's
 * CRD would come from other Kubernetes types than KEDA's release). Then `go mod tidy`.
 */
import { join } from "node:path";
import { goEnv, runGo } from "../gobuild.ts";
import { KEDA_MODULE, layout, requiredVersion } from "./mod.ts";

const HEADER = [
  "// The CRD generator of the modules (`deno task module-crds`): controller-gen as a library, run over",
  "// KEDA's API packages (a dependency of this module) and over a checkout of kyma-project/serverless.",
  "// The replace block is KEDA's own (its go.mod at the required version), so that the Kubernetes API",
  "// types embedded in KEDA's CRDs (ScaledJob's Job template) are the ones KEDA's release is built from.",
  "// `deno task module-crds --keda vX.Y.Z` rewrites it.",
];

/** KEDA's go.mod pieces the generator copies: its go line, controller-tools and replace block. */
export function kedaPins(kedaGoMod: string): { go: string; tools: string; replace: string } {
  const go = kedaGoMod.match(/^go (\S+)$/m)?.[1];
  const replace = kedaGoMod.match(/^replace \(\n[\s\S]*?^\)$/m)?.[0];
  if (!go) throw new Error("KEDA's go.mod has no go line");
  return {
    go,
    tools: requiredVersion(kedaGoMod, "sigs.k8s.io/controller-tools"),
    replace: replace ?? "",
  };
}

/** The generator's go.mod before `go mod tidy`. */
export function renderGoMod(kedaVersion: string, kedaGoMod: string): string {
  const pins = kedaPins(kedaGoMod);
  return [
    ...HEADER,
    "module platform-project.local/tools/crdgen",
    "",
    `go ${pins.go}`,
    "",
    "require (",
    `\t${KEDA_MODULE} ${kedaVersion}`,
    `\tsigs.k8s.io/controller-tools ${pins.tools}`,
    ")",
    "",
    ...(pins.replace ? [pins.replace, ""] : []),
  ].join("\n");
}

/** Rewrites `root`'s generator go.mod for KEDA `version` and tidies it (uses the Go module proxy). */
export async function bumpKeda(root: string, version: string): Promise<void> {
  const dir = layout(root).goModule;
  const info = JSON.parse(
    await runGo(["mod", "download", "-json", `${KEDA_MODULE}@${version}`], dir),
  ) as { GoMod?: string; Error?: string };
  if (!info.GoMod) throw new Error(info.Error ?? `${KEDA_MODULE}@${version} has no go.mod`);
  const text = renderGoMod(version, await Deno.readTextFile(info.GoMod));
  await Deno.writeTextFile(join(dir, "go.mod"), text);
  const tidy = await new Deno.Command("go", {
    args: ["mod", "tidy"],
    cwd: dir,
    env: { ...goEnv(), GOFLAGS: "-mod=mod" },
    stdin: "null",
  }).output();
  if (!tidy.success) {
    throw new Error(`go mod tidy in ${dir} failed:\n${new TextDecoder().decode(tidy.stderr)}`);
  }
}
