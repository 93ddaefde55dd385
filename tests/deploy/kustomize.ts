/**
 * Reads a kustomization the way `kubectl apply -k` does for the features deploy/ uses: resources
 * (files and folders) and components' resources (not patches: kustomizeObjects renders those).
 */
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { CACHE_DIR } from "../../tools/cluster/paths.ts";
import { binaryPaths } from "../../tools/cluster/build.ts";
import { parseAllDocuments } from "yaml";

/** A parsed manifest and the file it came from. */
export interface Manifest {
  file: string;
  doc: Record<string, unknown> & { kind: string; metadata: { name: string; namespace?: string } };
}

/**
 * The documents of every resource a kustomization references, recursively; throws on a missing
 * file, or a file outside the kustomization's folder (kustomize's load restriction). A folder may
 * be anywhere: kustomize takes it as a base with its own kustomization and its own root.
 */
export async function loadKustomization(dir: string, top = dir): Promise<Manifest[]> {
  const path = join(dir, "kustomization.yaml");
  const text = await Deno.readTextFile(path);
  const k = parseAllDocuments(text)[0].toJS() as { resources?: string[]; components?: string[] };
  const out: Manifest[] = [];
  for (const component of k.components ?? []) {
    out.push(...await loadKustomization(resolve(dir, component), top));
  }
  for (const entry of k.resources ?? []) {
    const target = resolve(dir, entry);
    const info = await Deno.stat(target).catch(() => {
      throw new Error(`${path}: resource ${entry} does not exist`);
    });
    if (info.isDirectory) {
      out.push(...await loadKustomization(target, top));
      continue;
    }
    const rel = relative(dir, target);
    if (rel.startsWith("..") || isAbsolute(rel)) {
      throw new Error(`${path}: ${entry} is outside ${dir}; kustomize refuses it`);
    }
    {
      for (const doc of parseAllDocuments(await Deno.readTextFile(target))) {
        if (doc.errors.length > 0) throw new Error(`${target}: ${doc.errors[0].message}`);
        const js = doc.toJS();
        if (js) out.push({ file: relative(top, target), doc: js });
      }
    }
  }
  return out;
}

/** The manifests of `kind` (and `name`, when given). */
export function find(manifests: Manifest[], kind: string, name?: string): Manifest["doc"][] {
  return manifests.map((m) => m.doc).filter((d) =>
    d.kind === kind && (!name || d.metadata.name === name)
  );
}

/** The folder of this file's repository's deploy/. */
export const DEPLOY = resolve(dirname(new URL(import.meta.url).pathname), "../../deploy");

/**
 * Runs `fn` with a folder (under .cache/cluster) whose kustomization is deploy/ (or `base`, a
 * variant's folder) with the component `deploy/<component>`, as a user's would be; the folder is
 * removed after.
 */
export async function withComponent<T>(
  component: string,
  fn: (dir: string) => Promise<T>,
  base: string = DEPLOY,
): Promise<T> {
  const dir = join(
    CACHE_DIR,
    `test-${component}-component-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`,
  );
  await Deno.mkdir(dir, { recursive: true });
  try {
    await Deno.writeTextFile(
      join(dir, "kustomization.yaml"),
      `resources: [${relative(dir, base)}]\ncomponents: [${
        relative(dir, join(DEPLOY, component))
      }]\n`,
    );
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** `withComponent` of deploy/istiod. */
export function withIstiodComponent<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  return withComponent("istiod", fn);
}

/** The objects `kubectl kustomize dir` renders (the control plane's kubectl); throws when it fails. */
export async function kustomizeObjects<T>(dir: string): Promise<T[]> {
  const o = await new Deno.Command((await binaryPaths()).kubectl, {
    args: ["kustomize", dir],
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  if (!o.success) throw new Error(`kubectl kustomize ${dir}: ${dec.decode(o.stderr)}`);
  return parseAllDocuments(dec.decode(o.stdout)).map((d) => d.toJS() as T).filter(Boolean);
}
