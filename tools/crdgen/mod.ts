/**
 * The modules' CRD generator (`deno task module-crds`): builds `tools/crdgen` (controller-gen as a
 * library, pinned with KEDA in its go.mod) once into `.cache/crdgen/`, runs it over KEDA's API
 * packages and over a kyma-project/serverless checkout, and keeps what it writes as data files
 * beside their provenance (data.ts) in `data/upstream/`. Needs Go; nothing else.
 */
import { basename, dirname, join, resolve } from "node:path";
import { parse } from "yaml";
import { fileURLToPath } from "node:url";
import { type GoBuild, GoCache, goEnv, runGo } from "../gobuild.ts";
import { CRDS_JSON, functionData, kedaData, PROVENANCE_JSON, provenanceMismatch } from "./data.ts";

/** This tool's directory in the repository it runs from. */
const TOOL_DIR = dirname(fileURLToPath(import.meta.url));
/** The repository the tool belongs to (its binary cache is there, whatever `root` is written). */
export const REPO_ROOT: string = resolve(TOOL_DIR, "..", "..");
/** KEDA's Go module. */
export const KEDA_MODULE = "github.com/kedacore/keda/v2";
/** The API group the Function CRD is renamed to. */
export const SERVERLESS_GROUP = "serverless.platform-project.io";

/** Where a repository (`root`) keeps the generator and the generated files. */
export function layout(root: string) {
  return {
    goModule: join(root, "tools", "crdgen"),
    keda: join(root, "data", "upstream", "keda"),
    serverless: join(root, "data", "upstream", "serverless"),
  };
}

const cache = new GoCache(join(REPO_ROOT, ".cache", "crdgen"));

/** The version a go.mod requires of `module` (`v1.2.3`). */
export function requiredVersion(gomod: string, module: string): string {
  const esc = module.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const m = gomod.match(new RegExp(`^\\s*(?:require\\s+)?${esc}\\s+(v\\S+)`, "m"));
  if (!m) throw new Error(`go.mod requires no ${module}`);
  return m[1];
}

/** The Go source files of the generator (sorted: they are build inputs). */
export async function goFiles(goModule: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(goModule)) {
    if (e.isFile && e.name.endsWith(".go")) names.push(e.name);
  }
  return names.sort();
}

/** The build of the generator of `goModule` (controller-gen as a library, KEDA's API types). */
export async function crdgenBuild(goModule: string): Promise<GoBuild> {
  const gomod = await Deno.readTextFile(join(goModule, "go.mod"));
  const tools = requiredVersion(gomod, "sigs.k8s.io/controller-tools");
  // controller-gen writes its version into each CRD's annotations; built as a dependency, it
  // would say "(devel)", so set it as `go install ...controller-gen@version` does.
  const ldflags = `-s -w -X sigs.k8s.io/controller-tools/pkg/version.version=${tools}`;
  return {
    name: "crdgen",
    label: `crdgen (controller-tools ${tools}, keda ${requiredVersion(gomod, KEDA_MODULE)})`,
    dir: goModule,
    inputs: ["go.mod", "go.sum", ...await goFiles(goModule)],
    extra: [[["."], ldflags, goEnv()]],
    packages: ["."],
    outputs: ["crdgen"],
    ldflags,
  };
}

/** Builds the generator of `goModule` when stale; returns the binary's path. */
export async function ensureCrdgen(
  goModule: string,
  log: (msg: string) => void = (m) => console.error(`[crdgen] ${m}`),
): Promise<string> {
  await cache.ensure([await crdgenBuild(goModule)], log);
  return cache.path("crdgen");
}

/** KEDA's module directory and version, as required by the generator's go.mod. */
export async function kedaModule(goModule: string): Promise<{ dir: string; version: string }> {
  const info = JSON.parse(await runGo(["mod", "download", "-json", KEDA_MODULE], goModule)) as {
    Dir?: string;
    Version?: string;
    Error?: string;
  };
  if (!info.Dir || !info.Version) throw new Error(info.Error ?? `no ${KEDA_MODULE} module`);
  return { dir: info.Dir, version: info.Version };
}

/** Runs the generator binary in `cwd`. */
async function crdgen(bin: string, args: string[], cwd: string): Promise<void> {
  await runGo(args, cwd, bin);
}

/**
 * Runs controller-gen over KEDA's API packages into `out`: what KEDA's release installs, or with
 * `bases` what KEDA commits as config/crd/bases (unpatched).
 */
export async function generateKeda(root: string, out: string, bases = false): Promise<void> {
  const { goModule } = layout(root);
  const bin = await ensureCrdgen(goModule);
  const keda = await kedaModule(goModule);
  await crdgen(
    bin,
    ["keda", "-module", keda.dir, "-out", out, ...(bases ? ["-bases"] : [])],
    goModule,
  );
}

/** Where a Function CRD comes from: a kyma-project/serverless checkout at a tag and commit. */
export interface ServerlessSource {
  dir: string;
  tag: string;
  commit: string;
}

/** Runs controller-gen over the Function API of a kyma-project/serverless checkout into `out`. */
export async function generateFunction(
  root: string,
  src: ServerlessSource,
  out: string,
): Promise<void> {
  if (!/^[0-9a-f]{40}$/.test(src.commit)) {
    throw new Error(
      `--commit must be the checkout's full commit hash (40 hex digits), not ${
        JSON.stringify(src.commit)
      }`,
    );
  }
  const { goModule } = layout(root);
  const bin = await ensureCrdgen(goModule);
  await crdgen(bin, [
    "serverless",
    "-src",
    resolve(src.dir),
    "-tag",
    src.tag,
    "-commit",
    src.commit,
    "-group",
    SERVERLESS_GROUP,
    "-out",
    out,
  ], goModule);
}

async function yamlFiles(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.endsWith(".yaml")) {
      out.set(e.name, await Deno.readTextFile(join(dir, e.name)));
    }
  }
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)));
}

/** The CRD file names in the order KEDA's config/crd/kustomization.yaml installs them. */
async function kustomizationOrder(kedaDir: string): Promise<string[]> {
  const k = parse(
    await Deno.readTextFile(join(kedaDir, "config", "crd", "kustomization.yaml")),
  ) as { resources?: string[] };
  return (k.resources ?? []).map((r) => basename(r));
}

function inOrder(files: Map<string, string>, order: string[]): Map<string, string> {
  const rank = (name: string) => order.includes(name) ? order.indexOf(name) : order.length;
  return new Map([...files].sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b)));
}

/**
 * Every file the task owns, path → content, as generation gives them: KEDA's data files from Go,
 * the Function's from a checkout when `serverless` is given, else as committed once they agree with
 * their provenance (without a checkout they cannot be regenerated, only verified).
 */
export async function plannedFiles(
  root: string,
  serverless?: ServerlessSource,
): Promise<Map<string, string>> {
  const paths = layout(root);
  const tmp = await Deno.makeTempDir({ prefix: "module-crds-" });
  try {
    const files = new Map<string, string>();
    await generateKeda(root, join(tmp, "keda"));
    const { dir, version } = await kedaModule(paths.goModule);
    const keda = inOrder(await yamlFiles(join(tmp, "keda")), await kustomizationOrder(dir));
    for (const [name, text] of await kedaData(keda, version)) {
      files.set(join(paths.keda, name), text);
    }
    if (serverless) {
      const yaml = join(tmp, `functions.${SERVERLESS_GROUP}.yaml`);
      await generateFunction(root, serverless, yaml);
      const data = await functionData(basename(yaml), await Deno.readTextFile(yaml));
      for (const [name, text] of data) files.set(join(paths.serverless, name), text);
    } else {
      const why = await provenanceMismatch(paths.serverless);
      if (why) {
        throw new Error(`${why}: regenerate it with --serverless DIR --tag TAG --commit SHA`);
      }
      for (const name of [CRDS_JSON, PROVENANCE_JSON]) {
        const path = join(paths.serverless, name);
        files.set(path, await Deno.readTextFile(path));
      }
    }
    return files;
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

/** The files of the data folders that `planned` does not hold (`module-crds` removes them). */
export async function strayFiles(planned: Map<string, string>, root: string): Promise<string[]> {
  const { keda, serverless } = layout(root);
  const stray: string[] = [];
  for (const dir of [keda, serverless]) {
    try {
      for await (const e of Deno.readDir(dir)) {
        if (e.isFile && !planned.has(join(dir, e.name))) stray.push(join(dir, e.name));
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  return stray.sort();
}
