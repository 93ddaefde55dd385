/**
 * The layers of the project and which may import which, as data, and the check over a module
 * graph as `deno info --json` prints it. docs/architecture.md draws the same picture.
 */

/** A layer: a path prefix (the first that matches a file wins) and the layers it may import. */
export interface Layer {
  name: string;
  prefixes: readonly string[];
  /** Layers this one may import besides itself. */
  imports: readonly string[];
}

const SRC_ALL = [
  "data",
  "api",
  "reconcile",
  "dataplane",
  "crd",
  "runtime",
  "controllers",
  "kube",
  "deploy",
  "sim",
  "cli",
];

/** Bottom to top. */
export const LAYERS: readonly Layer[] = [
  // Upstream files kept as data (data/upstream/): imported as JSON or text, importing nothing.
  { name: "data", prefixes: ["data/"], imports: [] },
  { name: "api", prefixes: ["src/api/"], imports: [] },
  { name: "reconcile", prefixes: ["src/reconcile/"], imports: ["api", "data"] },
  { name: "dataplane", prefixes: ["src/dataplane/"], imports: ["api"] },
  { name: "crd", prefixes: ["src/crd/"], imports: ["api"] },
  { name: "runtime", prefixes: ["src/runtime/"], imports: ["api", "reconcile"] },
  {
    name: "controllers",
    prefixes: ["src/controllers/"],
    imports: ["api", "reconcile", "dataplane", "runtime", "data"],
  },
  {
    name: "kube",
    prefixes: ["src/kube/"],
    imports: ["api", "reconcile", "dataplane", "crd", "runtime", "controllers"],
  },
  // What deploy/ and the Helm chart are generated from: the operator's RBAC, monitoring objects.
  {
    name: "deploy",
    prefixes: ["src/deploy/"],
    imports: ["api", "reconcile", "dataplane", "crd", "runtime", "controllers", "kube"],
  },
  {
    name: "sim",
    prefixes: ["sim/"],
    imports: ["api", "reconcile", "dataplane", "crd", "runtime", "controllers"],
  },
  { name: "cli", prefixes: ["src/cli/", "mod.ts"], imports: SRC_ALL },
  // Tools build and run things beside the product (the local control plane, the operator as a
  // process); they may use the product, never the tests or benchmarks.
  // deploy/operator/prune.ts and seal_cache.ts run in the image's build stage and import nothing of ours.
  { name: "tools", prefixes: ["tools/", "deploy/"], imports: SRC_ALL },
  { name: "bench", prefixes: ["bench/"], imports: [...SRC_ALL, "tools"] },
  { name: "tests", prefixes: ["tests/"], imports: [...SRC_ALL, "tools", "bench"] },
];

/** The layer of a repository-relative path; undefined outside every layer. */
export function layerOf(path: string): Layer | undefined {
  return LAYERS.find((l) => l.prefixes.some((p) => path === p || path.startsWith(p)));
}

/** One import edge between two repository files. */
export interface Edge {
  from: string;
  to: string;
}

/** The edges that run the wrong way, as `from -> to (layer a may not import layer b)`. */
export function wrongWay(edges: readonly Edge[]): string[] {
  const out: string[] = [];
  for (const { from, to } of edges) {
    const a = layerOf(from);
    const b = layerOf(to);
    if (!a || !b || a.name === b.name) continue;
    if (!a.imports.includes(b.name)) {
      out.push(`${from} -> ${to} (${a.name} may not import ${b.name})`);
    }
  }
  return [...new Set(out)].sort();
}

interface InfoModule {
  specifier?: string;
  dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
}

/** The repository-internal edges of a `deno info --json` graph; `root` is the repo's file URL. */
export function edgesOf(info: { modules?: InfoModule[] }, root: string): Edge[] {
  const edges: Edge[] = [];
  for (const m of info.modules ?? []) {
    const from = m.specifier;
    if (!from?.startsWith(root)) continue;
    for (const d of m.dependencies ?? []) {
      for (const to of [d.code?.specifier, d.type?.specifier]) {
        if (to?.startsWith(root)) {
          edges.push({ from: from.slice(root.length), to: to.slice(root.length) });
        }
      }
    }
  }
  return edges;
}

/** `deno info --json --frozen entry`, run from `root`, parsed; throws with Deno's message if it fails. */
export async function denoInfo(entry: string, root: string): Promise<unknown> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--frozen", entry],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/**
 * The import cycles among files: each strongly connected component of more than one file (Tarjan's
 * algorithm), its files sorted, the components sorted by their first file.
 */
export function cyclesOf(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) out.push(component.sort());
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return out.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

/**
 * The longest chain of imports among the files under `prefix` (type imports included: a reader
 * follows those too), as the files on it, top first; its length is the graph's depth in levels.
 */
export function deepestChain(edges: readonly Edge[], prefix: string): string[] {
  const level = levelsOf(edges, prefix);
  // The highest file (the first by name among equals), then at each step an import one level down.
  let at = [...level].reduce((top, f) => (f[1] > top[1] ? f : top), ["", 0])[0];
  const chain: string[] = [];
  while (at) {
    const from = prefix + at;
    const below = level.get(at)! - 1;
    chain.push(from);
    const next = edges.find((e) =>
      e.from === from && e.to.startsWith(prefix) && level.get(e.to.slice(prefix.length)) === below
    );
    at = next ? next.to.slice(prefix.length) : "";
  }
  return chain;
}

/**
 * The level of each file under `prefix`, by its path below it: 1 for a file importing no other file
 * there, else one more than the highest level it imports (type imports included).
 */
export function levelsOf(edges: readonly Edge[], prefix: string): Map<string, number> {
  const next = new Map<string, string[]>();
  const files = new Set<string>();
  for (const e of edges) {
    if (!e.from.startsWith(prefix)) continue;
    files.add(e.from);
    if (e.to.startsWith(prefix)) {
      files.add(e.to);
      next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
    }
  }
  const level = new Map<string, number>();
  const of = (f: string): number => {
    const hit = level.get(f);
    if (hit !== undefined) return hit;
    level.set(f, 1); // a cycle (reported by cyclesOf) stops here
    const l = 1 + Math.max(0, ...(next.get(f) ?? []).map(of));
    level.set(f, l);
    return l;
  };
  return new Map([...files].sort().map((f) => [f.slice(prefix.length), of(f)]));
}

/**
 * The levels a drawing gives its files: lines of a fenced block, a level number at the start of a
 * line applying to the files named on it and on the unnumbered lines below.
 */
export function drawnLevels(block: string): Map<string, number> {
  const out = new Map<string, number>();
  let current = 0;
  for (const line of block.split("\n")) {
    const numbered = line.match(/^\s*(\d+)\s/);
    if (numbered) current = Number(numbered[1]);
    for (const m of line.matchAll(/[\w/]+\.ts\b/g)) if (current > 0) out.set(m[0], current);
  }
  return out;
}
