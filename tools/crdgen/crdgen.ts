/**
 * `deno task module-crds`: regenerates the CRDs the modules install from KEDA's and Kyma
 * serverless's Go API types (see docs/modules.md).
 *
 *   ./deno task module-crds                     # KEDA's data files; verifies the Function's
 *   ./deno task module-crds --check             # writes nothing; exit 1 listing stale files
 *   ./deno task module-crds --keda vX.Y.Z       # moves to another KEDA release, then regenerates
 *   ./deno task module-crds --serverless DIR --tag TAG --commit SHA   # the Function CRD as well
 *
 * `--root DIR` works on another copy of the repository (tests).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { relative } from "node:path";
import { bumpKeda } from "./gomod.ts";
import { checkOrWrite, type StaleFile } from "../../src/cli/generated_files.ts";
import { plannedFiles, REPO_ROOT, type ServerlessSource, strayFiles } from "./mod.ts";

const USAGE =
  "usage: module-crds [--check] [--keda vX.Y.Z] [--serverless DIR --tag TAG --commit SHA] [--root DIR]";

/** Parsed command line. */
export interface Options {
  check: boolean;
  keda?: string;
  serverless?: ServerlessSource;
  root: string;
}

/** Parses the command line; throws with the usage on a mistake. */
export function parseOptions(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      check: { type: "boolean", default: false },
      keda: { type: "string" },
      serverless: { type: "string" },
      tag: { type: "string" },
      commit: { type: "string" },
      root: { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  });
  const { serverless: dir, tag, commit } = values;
  if (
    (dir === undefined) !== (tag === undefined) || (dir === undefined) !== (commit === undefined)
  ) {
    throw new Error(`--serverless, --tag and --commit go together\n${USAGE}`);
  }
  if (values.check && values.keda) throw new Error(`--check writes nothing; --keda does\n${USAGE}`);
  if (values.keda !== undefined && !/^v\d+\.\d+\.\d+$/.test(values.keda)) {
    throw new Error(`--keda wants a release such as v2.20.2, not ${JSON.stringify(values.keda)}`);
  }
  return {
    check: values.check ?? false,
    ...(values.keda ? { keda: values.keda } : {}),
    ...(dir !== undefined && tag !== undefined && commit !== undefined
      ? { serverless: { dir, tag, commit } }
      : {}),
    root: values.root ?? REPO_ROOT,
  };
}

/** Runs the task; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  let opts: Options;
  try {
    opts = parseOptions(args);
  } catch (e) {
    console.error((e as Error).message);
    return 2;
  }
  let planned: Map<string, string>, stale: StaleFile[], stray: string[];
  try {
    if (opts.keda) await bumpKeda(opts.root, opts.keda);
    planned = await plannedFiles(opts.root, opts.serverless);
    stray = await strayFiles(planned, opts.root);
    const files = [...planned].map(([path, text]) => ({ path, text }));
    stale = await checkOrWrite(files, opts.check);
  } catch (e) {
    console.error(`module-crds: ${(e as Error).message}`);
    return 1;
  }
  const show = (p: string) => relative(opts.root, p);
  const changed = [...stale.map((s) => s.path), ...stray].map(show);
  if (opts.check) {
    if (changed.length === 0) {
      console.log(`module CRDs are up to date (${planned.size} files)`);
      return 0;
    }
    console.error(
      `stale module CRDs (run ./deno task module-crds):\n${
        changed.map((p) => `  ${p}`).join("\n")
      }`,
    );
    return 1;
  }
  for (const path of stray) await Deno.remove(path);
  console.log(
    changed.length === 0
      ? `module CRDs unchanged (${planned.size} files)`
      : `wrote ${changed.join(", ")}`,
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
