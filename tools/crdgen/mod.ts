/**
 * The modules' CRD generator (`deno task module-crds`): builds `tools/crdgen` (controller-gen as a
 * library, pinned with KEDA in its go.mod) once into `.cache/crdgen/`, runs it over KEDA's API
 * packages and over a kyma-project/serverless checkout, and writes the YAML plus the TS module the
 * reconcilers embed (see embed.ts). Needs Go; nothing else.
 */
import { basename, dirname, join, resolve } from "node:path";
import { parse } from "yaml";
import { fileURLToPath } from "node:url";
import { type GoBuild, GoCache, goEnv, runGo } from "../gobuild.ts";
import { embeddingFiles } from "./embed.ts";

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
    keda: join(root, "src", "reconcile", "keda", "crds"),
    serverless: join(root, "src", "reconcile", "serverless", "crds"),
    functionYaml: join(
      root,
      "src",
      "reconcile",
      "serverless",
      "crds",
      `functions.${SERVERLESS_GROUP}.yaml`,
    ),
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

async function crdgenBuild(goModule: string): Promise<GoBuild> {
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
 * Every file the task owns, path → content, as generation gives them: KEDA's YAML from Go (and
 * its embedding), the Function's embedding from its committed YAML, or from a checkout when
 * `serverless` is given.
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
    for (const [name, text] of keda) files.set(join(paths.keda, name), text);
    for (const [name, text] of await embeddingFiles("keda", keda, version)) {
      files.set(join(paths.keda, name), text);
    }
    let fn: string;
    if (serverless) {
      await generateFunction(root, serverless, join(tmp, "function.yaml"));
      fn = await Deno.readTextFile(join(tmp, "function.yaml"));
      files.set(paths.functionYaml, fn);
    } else {
      fn = await Deno.readTextFile(paths.functionYaml);
    }
    const fnName = paths.functionYaml.slice(paths.serverless.length + 1);
    for (const [name, text] of await embeddingFiles("serverless", new Map([[fnName, fn]]))) {
      files.set(join(paths.serverless, name), text);
    }
    return files;
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

/** The planned files whose committed content differs (or that are missing), and stray YAML. */
export async function staleFiles(planned: Map<string, string>, root: string): Promise<string[]> {
  const stale: string[] = [];
  for (const [path, text] of planned) {
    const now = await Deno.readTextFile(path).catch(() => undefined);
    if (now !== text) stale.push(path);
  }
  const kedaDir = layout(root).keda;
  for (const name of (await yamlFiles(kedaDir).catch(() => new Map())).keys()) {
    if (!planned.has(join(kedaDir, name))) stale.push(join(kedaDir, name));
  }
  return stale;
}

/** Writes the planned files and removes KEDA YAML files generation no longer gives. */
export async function writeFiles(planned: Map<string, string>, root: string): Promise<void> {
  const kedaDir = layout(root).keda;
  await Deno.mkdir(kedaDir, { recursive: true });
  for (const name of (await yamlFiles(kedaDir)).keys()) {
    if (!planned.has(join(kedaDir, name))) await Deno.remove(join(kedaDir, name));
  }
  for (const [path, text] of planned) await Deno.writeTextFile(path, text);
}
