/** `mod.ts deploy`: writes the generated files of deploy/ (RBAC, CRD copies), or with `--check` lists what is stale. */
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { generatorHelp, parseGeneratorArgs } from "./generator_args.ts";
import { type DeployFile, deployFiles } from "../kube/deploy_files.ts";
import { chartFiles } from "../kube/chart.ts";
import { VERSION } from "./version.ts";

const HELP = generatorHelp(
  "deploy",
  `Writes the generated files of DIR: rbac.yaml (from the verb table in src/kube/rbac.ts),
monitoring/ (the optional kustomize component: ServiceMonitor, PrometheusRule, dashboard) and
helm/platform-operator/ (the Helm chart, rendered from DIR's manifests and the project's crds/).`,
  "the deploy folder (default: the project's deploy/)",
);

/** The project's `deploy/` folder. */
export const DEPLOY_DIR = fileURLToPath(new URL("../../deploy", import.meta.url));

async function readOrUndefined(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

/** Every generated file of `dir`: deploy_files.ts's, then the chart read from `dir`'s manifests. */
async function generated(dir: string): Promise<DeployFile[]> {
  const own = deployFiles();
  // The chart reads rbac.yaml's objects, not the file, and the other manifests as written.
  return [...own, ...await chartFiles(dir, VERSION)];
}

/** Paths under `dir` whose text differs from the generated one. */
export async function staleDeployFiles(dir: string): Promise<string[]> {
  const stale: string[] = [];
  for (const file of await generated(dir)) {
    if (await readOrUndefined(join(dir, file.path)) !== file.text) stale.push(file.path);
  }
  return stale;
}

/** Runs the command; resolves to the exit code (0 ok, 1 stale with --check, 2 bad usage). */
export async function main(args: string[]): Promise<number> {
  const values = parseGeneratorArgs("deploy", args, HELP);
  if (typeof values === "number") return values;
  const dir = values.dir ?? DEPLOY_DIR;
  const shown = relative(Deno.cwd(), dir) || ".";
  const stale = await staleDeployFiles(dir);
  if (values.check) {
    if (stale.length === 0) {
      console.log(`${shown}/ generated files are up to date`);
      return 0;
    }
    console.error(
      `${shown}/ generated files are stale: ${stale.join(", ")}. Run \`deno task deploy\`.`,
    );
    return 1;
  }
  for (const file of await generated(dir)) {
    if (!stale.includes(file.path)) continue;
    await Deno.mkdir(dirname(join(dir, file.path)), { recursive: true });
    await Deno.writeTextFile(join(dir, file.path), file.text);
    console.log(`wrote ${shown}/${file.path}`);
  }
  return 0;
}
