/** Running `deno task module-crds` on copies of the repository, and a stand-in Kyma checkout. */
import { dirname, join } from "node:path";
import { goEnv } from "../../tools/gobuild.ts";
import { goFiles, layout, REPO_ROOT } from "../../tools/crdgen/mod.ts";

/** Exit code and output of a command. */
export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the repository's `./deno` with `args` in the repository. */
export async function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<CommandResult> {
  const out = await new Deno.Command(join(REPO_ROOT, "deno"), {
    args,
    cwd: REPO_ROOT,
    env,
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Runs `./deno task module-crds ARGS`. */
export function task(args: string[]): Promise<CommandResult> {
  return run(["task", "module-crds", ...args]);
}

/** The `./deno task module-crds` lines of docs/modules.md's shell blocks. */
export async function docCommands(): Promise<string[]> {
  const text = await Deno.readTextFile(join(REPO_ROOT, "docs", "modules.md"));
  const blocks = [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  return blocks.flatMap((b) => b.split("\n")).map((l) => l.trim()).filter((l) =>
    l.startsWith("./deno task module-crds")
  );
}

async function copyFile(from: string, to: string): Promise<void> {
  await Deno.mkdir(dirname(to), { recursive: true });
  await Deno.copyFile(from, to);
}

/** A copy of what the task reads and writes (generator module, generated CRDs) in a temp dir. */
export async function tempRoot(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "module-crds-root-" });
  const [from, to] = [layout(REPO_ROOT), layout(root)];
  for (const f of ["go.mod", "go.sum", ...await goFiles(from.goModule)]) {
    await copyFile(join(from.goModule, f), join(to.goModule, f));
  }
  for (const [a, b] of [[from.keda, to.keda], [from.serverless, to.serverless]]) {
    for await (const e of Deno.readDir(a)) await copyFile(join(a, e.name), join(b, e.name));
  }
  return root;
}

const FUNCTION_TYPES = `package v1alpha2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// FunctionSpec defines the desired state of Function.
type FunctionSpec struct {
	// Specifies the runtime of the Function.
	// +kubebuilder:validation:Enum=nodejs22;python312
	Runtime string \`json:"runtime"\`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName={stand-in}

// Function is a stand-in of Kyma's Function.
type Function struct {
	metav1.TypeMeta   \`json:",inline"\`
	metav1.ObjectMeta \`json:"metadata"\`

	Spec FunctionSpec \`json:"spec"\`
}
`;

/**
 * A directory shaped like a kyma-project/serverless checkout (module path, Function API package,
 * group marker) whose Function is a small stand-in: Kyma's repository is not on the Go module
 * proxy, so a test cannot fetch it. Its go.sum comes from `go mod tidy` (module cache or proxy).
 */
export async function writeFunctionFixture(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "kyma-serverless-" });
  const api = join(dir, "components", "buildless-serverless", "api", "v1alpha2");
  await Deno.mkdir(api, { recursive: true });
  await Deno.writeTextFile(
    join(dir, "go.mod"),
    "module github.com/kyma-project/serverless\n\ngo 1.26.0\n\nrequire k8s.io/apimachinery v0.35.5\n",
  );
  await Deno.writeTextFile(
    join(api, "groupversion_info.go"),
    "// Package v1alpha2 is a stand-in of Kyma's Function API.\n" +
      "// +kubebuilder:object:generate=true\n// +groupName=serverless.kyma-project.io\npackage v1alpha2\n",
  );
  await Deno.writeTextFile(join(api, "function_types.go"), FUNCTION_TYPES);
  const tidy = await new Deno.Command("go", {
    args: ["mod", "tidy"],
    cwd: dir,
    env: { ...goEnv(), GOFLAGS: "-mod=mod" },
  }).output();
  if (!tidy.success) throw new Error(new TextDecoder().decode(tidy.stderr));
  return dir;
}
