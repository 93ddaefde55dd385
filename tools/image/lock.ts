/**
 * The operator's own Deno config and lockfile (deploy/operator/): the npm packages the operator's
 * module graph reaches, cut from the project's deno.lock. With `nodeModulesDir: "none"` Deno
 * installs, and `deno compile` embeds, every package of the lockfile it is given, so the
 * project's lockfile would ship its test libraries (fast-check) and the packages only the CRD
 * generator uses. The cut keeps the project's resolutions and integrity hashes: nothing is
 * resolved again, so both lockfiles always agree.
 */
import { join } from "node:path";

/** Repository root. */
export const ROOT: string = join(import.meta.dirname ?? ".", "..", "..");
/** The folder of the operator's own config and lockfile. */
export const OPERATOR_CONFIG_DIR: string = join(ROOT, "deploy", "operator");
/** The operator's config, relative to the root (as `deno --config` is given it). */
export const OPERATOR_CONFIG = "deploy/operator/deno.json";
/** The entry of the operator (the binary's and the image's). */
export const OPERATOR_ENTRY = "src/cli/operator_main.ts";

/** A Deno lockfile, version 5 (only the fields this cut reads or writes). */
export interface Lockfile {
  version: string;
  specifiers: Record<string, string>;
  npm: Record<string, { integrity?: string; dependencies?: string[]; [k: string]: unknown }>;
  workspace?: { dependencies?: string[] };
}

/** The package name of a snapshot key such as `@scope/name@1.2.3_peer@4.5.6`. */
export function packageName(key: string): string {
  return key.slice(0, key.indexOf("@", 1));
}

/** The snapshot keys `roots` (e.g. `npm:yaml@2.9.1`) reach through their dependencies. */
export function closure(lock: Lockfile, roots: readonly string[]): string[] {
  const byName = new Map<string, string[]>();
  for (const key of Object.keys(lock.npm)) {
    byName.set(packageName(key), [...byName.get(packageName(key)) ?? [], key]);
  }
  const seen = new Set<string>();
  const visit = (key: string) => {
    if (seen.has(key)) return;
    if (!lock.npm[key]) throw new Error(`deno.lock has no npm package ${key}`);
    seen.add(key);
    for (const dep of lock.npm[key].dependencies ?? []) {
      // A dependency names a key of its own when the name alone is ambiguous (`name@version`).
      if (lock.npm[dep]) {
        visit(dep);
        continue;
      }
      const keys = byName.get(dep) ?? [];
      if (keys.length !== 1) throw new Error(`deno.lock: ${key} needs ${dep}: ${keys.join(", ")}`);
      visit(keys[0]);
    }
  };
  for (const root of roots) {
    const version = lock.specifiers[root];
    if (!version) throw new Error(`deno.lock has no specifier ${root}`);
    visit(`${root.slice("npm:".length, root.lastIndexOf("@"))}@${version}`);
  }
  return [...seen].sort();
}

/** The lockfile of `imports` (bare name → `npm:` specifier): `lock` cut to what they reach. */
export function cutLock(lock: Lockfile, imports: Record<string, string>): Lockfile {
  const roots = Object.values(imports).sort();
  const keep = new Set(closure(lock, roots));
  return {
    version: lock.version,
    specifiers: Object.fromEntries(roots.map((r) => [r, lock.specifiers[r]])),
    npm: Object.fromEntries(Object.entries(lock.npm).filter(([k]) => keep.has(k))),
    workspace: { dependencies: roots },
  };
}

/** The operator config's imports. */
export async function operatorImports(): Promise<Record<string, string>> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, OPERATOR_CONFIG))) as {
    imports: Record<string, string>;
  };
  return config.imports;
}

/** The text deploy/operator/deno.lock must hold: the project's lockfile cut to the config's imports. */
export async function expectedOperatorLock(): Promise<string> {
  const lock = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.lock"))) as Lockfile;
  return `${JSON.stringify(cutLock(lock, await operatorImports()), null, 2)}\n`;
}

if (import.meta.main) {
  const path = join(OPERATOR_CONFIG_DIR, "deno.lock");
  const want = await expectedOperatorLock();
  const have = await Deno.readTextFile(path).catch(() => "");
  if (Deno.args.includes("--check")) {
    if (have !== want) {
      console.error(`${path} is stale: run ./deno run -A tools/image/lock.ts`);
      Deno.exit(1);
    }
    console.log(`${path} is up to date`);
  } else if (have !== want) {
    await Deno.writeTextFile(path, want);
    console.log(`wrote ${path}`);
  }
}
