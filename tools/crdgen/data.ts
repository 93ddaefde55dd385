/**
 * The data files a module's upstream CRDs are kept in (`data/upstream/<module>/`): `crds.json`, the
 * CRDs controller-gen wrote as YAML re-encoded as one JSON array (in install order), and
 * `provenance.json`, where they come from and the SHA-256 of `crds.json`. JSON because the operator
 * parses it at run time: the YAML would take about 300 ms for KEDA's ScaledJob CRD alone and an npm
 * package, JSON.parse takes a few ms. Indented, so that an upgrade's diff can be read.
 */
import { parse } from "yaml";

/** Name of the CRDs' data file in a module's folder. */
export const CRDS_JSON = "crds.json";
/** Name of the provenance file beside it. */
export const PROVENANCE_JSON = "provenance.json";

/** What `provenance.json` says. */
export interface Provenance {
  /** The upstream project (a Go module or a GitHub repository). */
  source: string;
  /** Its release the CRDs are generated from. */
  version: string;
  /** The commit of that release, when the source is not a versioned Go module. */
  commit?: string;
  /** The controller-gen version that generated them. */
  controllerGen: string;
  /** Upstream's files or packages they correspond to. */
  upstream: string[];
  /** How they were made: the generator's own account. */
  generatedBy: string;
  /** The data file this describes. */
  data: string;
  /** Its SHA-256, hex. */
  sha256: string;
}

/** The comment lines (`# ...`) a generated YAML file starts with. */
export function headerOf(yaml: string): string[] {
  const lines: string[] = [];
  for (const line of yaml.split("\n")) {
    if (!line.startsWith("#")) break;
    lines.push(line.replace(/^# ?/, ""));
  }
  return lines;
}

/** The hex SHA-256 of a text's UTF-8 bytes. */
export async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The text of `crds.json` for generated YAML files (name → text, in install order). */
export function crdsJson(files: ReadonlyMap<string, string>): string {
  const docs = [...files].map(([name, text]) => {
    const doc = parse(text) as { kind?: string };
    if (doc?.kind !== "CustomResourceDefinition") throw new Error(`${name} is not a CRD`);
    return doc;
  });
  if (docs.length === 0) throw new Error("no CRDs to keep");
  return `${JSON.stringify(docs, null, 2)}\n`;
}

/** What the generator's header says of the source, beyond what the caller knows. */
function fromHeader(header: string): { controllerGen: string; kyma?: string[] } {
  const controllerGen = header.match(/controller-gen (v\S+)/)?.[1];
  if (!controllerGen) {
    throw new Error(`the YAML header names no controller-gen version:\n${header}`);
  }
  const kyma = header.match(/kyma-project\/serverless (\S+)\s+\(commit ([0-9a-f]{40})\), (\S+),/);
  return { controllerGen, ...(kyma ? { kyma: kyma.slice(1) } : {}) };
}

/** The KEDA CRDs' data files: `crds.json` and its provenance, from KEDA's generated YAML. */
export function kedaData(
  files: ReadonlyMap<string, string>,
  kedaVersion: string,
): Promise<Map<string, string>> {
  const text = crdsJson(files);
  const header = headerOf([...files.values()][0]).join(" ");
  return dataFiles(text, {
    source: "github.com/kedacore/keda/v2",
    version: kedaVersion.replace(/^v/, ""),
    controllerGen: fromHeader(header).controllerGen,
    upstream: [...files.keys()].map((name) => `config/crd/bases/${name}`),
    generatedBy: header,
  });
}

/** The Function CRD's data files, from the YAML generated from a Kyma checkout. */
export function functionData(name: string, yaml: string): Promise<Map<string, string>> {
  const text = crdsJson(new Map([[name, yaml]]));
  const header = headerOf(yaml).join(" ");
  const { controllerGen, kyma } = fromHeader(header);
  if (!kyma) {
    throw new Error(`the Function CRD's header names no tag, commit and package:\n${header}`);
  }
  const [version, commit, apiPackage] = kyma;
  return dataFiles(text, {
    source: "kyma-project/serverless",
    version,
    commit,
    controllerGen,
    upstream: [apiPackage],
    generatedBy: header,
  });
}

async function dataFiles(
  text: string,
  provenance: Omit<Provenance, "data" | "sha256">,
): Promise<Map<string, string>> {
  const full: Provenance = { ...provenance, data: CRDS_JSON, sha256: await sha256(text) };
  return new Map([[CRDS_JSON, text], [PROVENANCE_JSON, `${JSON.stringify(full, null, 2)}\n`]]);
}

/**
 * Why a module's committed data files disagree with their provenance (the data file it names
 * missing, or its SHA-256 another), or undefined when they agree. `dir` is the module's folder.
 */
export async function provenanceMismatch(dir: string): Promise<string | undefined> {
  const where = `${dir}/${PROVENANCE_JSON}`;
  let p: Partial<Provenance>;
  try {
    p = JSON.parse(await Deno.readTextFile(where)) as Partial<Provenance>;
  } catch (e) {
    return `${where}: ${(e as Error).message}`;
  }
  if (p.data !== CRDS_JSON || typeof p.sha256 !== "string") {
    return `${where}: "data" must be "${CRDS_JSON}" and "sha256" its hex SHA-256`;
  }
  const text = await Deno.readTextFile(`${dir}/${p.data}`).catch(() => undefined);
  if (text === undefined) return `${dir}/${p.data} is missing`;
  const actual = await sha256(text);
  return actual === p.sha256
    ? undefined
    : `${dir}/${p.data} has SHA-256 ${actual}, not the ${p.sha256} of ${PROVENANCE_JSON}`;
}
