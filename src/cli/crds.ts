/**
 * `mod.ts crds`: writes `crds/` and the operator's validation plans from the zod schemas, or with
 * `--check` reports what is stale.
 */
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { generatorHelp, parseGeneratorArgs } from "./generator_args.ts";
import { CRD_KUSTOMIZATION, crdKustomization, renderCrdFiles } from "../crd/render.ts";
import { PLANS_FILE, plansText } from "../api/schema/plans.ts";
import {
  checkOrWrite,
  type GeneratedFile,
  GeneratedFileError,
  isFsError,
} from "./generated_files.ts";

const HELP = generatorHelp(
  "crds",
  `Writes one CustomResourceDefinition a kind to DIR/<plural>.<group>.yaml, generated from src/api/,
and the validation plans the operator runs with to src/api/validation/plans.json.`,
  "the folder of the CRD files (default: the project's crds/)",
);

/** The project's `crds/` folder, wherever the command is run from. */
export const CRDS_DIR = fileURLToPath(new URL("../../crds", import.meta.url));

/** Reads every `*.yaml` file of `dir` but its kustomization (none when it does not exist). */
export async function readYamlFiles(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile && entry.name.endsWith(".yaml") && entry.name !== CRD_KUSTOMIZATION) {
        files.set(entry.name, await Deno.readTextFile(join(dir, entry.name)));
      }
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return files;
}

/** Every file the command owns in `dir` (the CRDs and their kustomization) and the plans. */
export function crdsFiles(dir: string): GeneratedFile[] {
  const crds = renderCrdFiles();
  return [
    ...crds.map((f) => ({ path: join(dir, f.name), text: f.text })),
    { path: join(dir, CRD_KUSTOMIZATION), text: crdKustomization(crds) },
    { path: PLANS_FILE, text: plansText() },
  ];
}

/** The YAML files of `dir` the command did not generate (it never deletes them). */
export async function foreignFiles(dir: string): Promise<string[]> {
  const names = new Set(renderCrdFiles().map((f) => f.name));
  return [...(await readYamlFiles(dir)).keys()].filter((n) => !names.has(n)).sort();
}

/**
 * Runs the command; resolves to the exit code (0 ok, 1 stale with --check or a file it cannot read
 * or write, 2 bad usage).
 */
export async function main(args: string[]): Promise<number> {
  const values = parseGeneratorArgs("crds", args, HELP);
  if (typeof values === "number") return values;
  const dir = values.dir ?? CRDS_DIR;
  const shown = relative(Deno.cwd(), dir) || ".";
  const show = (path: string) => relative(Deno.cwd(), path);
  const count = renderCrdFiles().length;
  let stale, foreign;
  try {
    stale = await checkOrWrite(crdsFiles(dir), values.check);
    foreign = (await foreignFiles(dir)).map((n) => join(dir, n));
  } catch (err) {
    // A folder or file it cannot read or write, in one line.
    if (!(err instanceof GeneratedFileError) && !isFsError(err)) throw err;
    console.error(`crds: ${err.message.split("\n")[0]}`);
    return 1;
  }
  if (values.check) {
    if (stale.length === 0 && foreign.length === 0) {
      console.log(`${shown}/ is up to date (${count} CRDs), and so is ${show(PLANS_FILE)}`);
      return 0;
    }
    console.error("These files differ from the schemas in src/api/:");
    for (const s of stale) console.error(`  ${show(s.path)}: ${s.why}`);
    for (const f of foreign) console.error(`  ${show(f)}: not generated from src/api/ (stale?)`);
    console.error("Run `deno task crds` to regenerate.");
    return 1;
  }
  for (const s of stale) console.log(`wrote ${show(s.path)}`);
  for (const f of foreign) {
    console.error(`warning: ${show(f)} is not generated from src/api/; delete it if stale`);
  }
  console.log(`${shown}/ has the ${count} CRDs of the schemas`);
  return 0;
}
