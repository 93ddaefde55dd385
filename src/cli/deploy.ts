/** `mod.ts deploy`: writes the generated files of deploy/ (RBAC, variants, monitoring, Helm chart), or with `--check` lists what is stale. */
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { generatorHelp, parseGeneratorArgs } from "./generator_args.ts";
import { deployFiles, DeployFolderError, variantsFiles } from "../deploy/files.ts";
import { chartFiles } from "../deploy/chart.ts";
import { VERSION } from "./version.ts";
import {
  checkOrWrite,
  type GeneratedFile,
  GeneratedFileError,
  isFsError,
  staleFiles,
} from "./generated_files.ts";

const HELP = generatorHelp(
  "deploy",
  `Writes the generated files of DIR: base/rbac.yaml and each controller's component
ratelimit/, scaler/, serverless/ (from the verb table in src/kube/rbac.ts), variants/,
monitoring/ (the optional kustomize component: ServiceMonitor, PrometheusRule, dashboard) and
helm/platform-operator/ (the Helm chart, rendered from DIR's manifests and the project's crds/).
The CRDs are not copied into DIR's kustomization: it takes the project's crds/ as a base.`,
  "the deploy folder (default: the project's deploy/)",
);

/** The project's `deploy/` folder. */
export const DEPLOY_DIR = fileURLToPath(new URL("../../deploy", import.meta.url));

/** Every generated file of `dir`: files.ts's, then the chart read from `dir`'s manifests. */
async function generated(dir: string): Promise<GeneratedFile[]> {
  // The chart reads rbac.yaml's objects, not the file, and the other manifests as written.
  const files = [...deployFiles(), ...await variantsFiles(dir), ...await chartFiles(dir, VERSION)];
  return files.map((f) => ({ path: join(dir, f.path), text: f.text }));
}

/** Paths under `dir` whose text differs from the generated one. */
export async function staleDeployFiles(dir: string): Promise<string[]> {
  return (await staleFiles(await generated(dir))).map((s) => relative(dir, s.path));
}

/**
 * Runs the command; resolves to the exit code (0 ok, 1 stale with --check or a folder it cannot
 * read, 2 bad usage).
 */
export async function main(args: string[]): Promise<number> {
  const values = parseGeneratorArgs("deploy", args, HELP);
  if (typeof values === "number") return values;
  const dir = values.dir ?? DEPLOY_DIR;
  const shown = relative(Deno.cwd(), dir) || ".";
  let files: GeneratedFile[];
  try {
    files = await generated(dir);
  } catch (err) {
    // What the folder lacks or holds wrong, in one line.
    if (!(err instanceof DeployFolderError) && !isFsError(err)) throw err;
    console.error(`deploy: ${err.message.split("\n")[0]}`);
    return 1;
  }
  let stale;
  try {
    stale = await checkOrWrite(files, values.check);
  } catch (err) {
    if (!(err instanceof GeneratedFileError)) throw err;
    console.error(`deploy: ${err.message}`);
    return 1;
  }
  const names = stale.map((s) => relative(dir, s.path));
  if (values.check) {
    if (stale.length === 0) {
      console.log(`${shown}/ generated files are up to date`);
      return 0;
    }
    console.error(
      `${shown}/ generated files are stale: ${names.join(", ")}. Run \`deno task deploy\`.`,
    );
    return 1;
  }
  for (const name of names) console.log(`wrote ${shown}/${name}`);
  return 0;
}
