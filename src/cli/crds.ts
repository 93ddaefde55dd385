/**
 * `mod.ts crds`: writes `crds/` and the operator's validation plans from the zod schemas, or with
 * `--check` reports what is stale.
 */
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { generatorHelp, parseGeneratorArgs } from "./generator_args.ts";
import {
  CRD_KUSTOMIZATION,
  crdDifferences,
  crdKustomization,
  renderCrdFiles,
} from "../crd/render.ts";
import { PLANS_FILE, plansText } from "../api/schema/plans.ts";

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

/** Runs the command; resolves to the exit code (0 ok, 1 stale with --check, 2 bad usage). */
export async function main(args: string[]): Promise<number> {
  const values = parseGeneratorArgs("crds", args, HELP);
  if (typeof values === "number") return values;
  const dir = values.dir ?? CRDS_DIR;
  const shown = relative(Deno.cwd(), dir) || ".";
  const expected = renderCrdFiles();
  const actual = await readYamlFiles(dir);
  const differences = crdDifferences(expected, actual);
  const kustomization = crdKustomization(expected);
  const kustomizationPath = join(dir, CRD_KUSTOMIZATION);
  const kustomizationStale =
    await Deno.readTextFile(kustomizationPath).catch(() => "") !== kustomization;
  if (kustomizationStale) differences.push(`${CRD_KUSTOMIZATION}: not the generated one`);
  const plans = plansText();
  const plansShown = relative(Deno.cwd(), PLANS_FILE);
  const plansStale = await Deno.readTextFile(PLANS_FILE).catch(() => "") !== plans;
  if (values.check) {
    if (plansStale) console.error(`${plansShown} differs from the schemas in src/api/schema/`);
    if (differences.length === 0) {
      if (plansStale) {
        console.error("Run `deno task crds` to regenerate.");
        return 1;
      }
      console.log(`${shown}/ is up to date (${expected.length} CRDs), and so is ${plansShown}`);
      return 0;
    }
    console.error(`${shown}/ differs from the schemas in src/api/:`);
    for (const line of differences) console.error(`  ${shown}/${line}`);
    console.error("Run `deno task crds` to regenerate.");
    return 1;
  }
  if (plansStale) {
    await Deno.writeTextFile(PLANS_FILE, plans);
    console.log(`wrote ${plansShown}`);
  }
  await Deno.mkdir(dir, { recursive: true });
  if (kustomizationStale) {
    await Deno.writeTextFile(kustomizationPath, kustomization);
    console.log(`wrote ${shown}/${CRD_KUSTOMIZATION}`);
  }
  for (const file of expected) {
    if (actual.get(file.name) === file.text) continue;
    await Deno.writeTextFile(join(dir, file.name), file.text);
    console.log(`wrote ${shown}/${file.name}`);
  }
  const names = new Set(expected.map((f) => f.name));
  for (const name of actual.keys()) {
    // Never delete a file this command did not write; say so instead.
    if (!names.has(name)) {
      console.error(`warning: ${shown}/${name} is not generated from src/api/; delete it if stale`);
    }
  }
  console.log(`${shown}/ has the ${expected.length} CRDs of the schemas`);
  return 0;
}
