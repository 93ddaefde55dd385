/**
 * What the operator ships, as a binary or in the deno-runtime image, is its own module graph:
 * `deno info` of src/cli/operator_main.ts names the npm packages it reaches; deploy/operator/'s
 * config imports exactly those, its lockfile holds exactly what they need, and `deno compile`
 * (pointed at this deno as its runtime, so it lists what it would embed without the denort
 * download) embeds nothing else. The project's own lockfile holds test libraries and the CRD
 * generator's packages; each check fails if one of them gets in.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { denoInfo } from "../architecture/layers.ts";
import {
  closure,
  expectedOperatorLock,
  type Lockfile,
  OPERATOR_CONFIG,
  OPERATOR_ENTRY,
  operatorImports,
  packageName,
  ROOT,
} from "../../tools/image/lock.ts";

const readJson = async <T>(path: string) =>
  JSON.parse(await Deno.readTextFile(join(ROOT, path))) as T;
const projectLock = await readJson<Lockfile>("deno.lock");
const operatorLock = await readJson<Lockfile>("deploy/operator/deno.lock");
const names = (keys: string[]) => new Set(keys.map(packageName));

/** The npm packages the operator's graph imports directly, as `npm:name@version`. */
async function graphRoots(): Promise<string[]> {
  const entry = pathToFileURL(join(ROOT, OPERATOR_ENTRY)).href;
  const info = await denoInfo(entry, ROOT) as { modules: { specifier: string }[] };
  return info.modules.map((m) => m.specifier).filter((s) => s.startsWith("npm:"))
    .map((s) => s.replace(/^npm:\/?/, "npm:")).sort();
}

/** Packages of the project's lockfile the operator never reaches: none may ship. */
const unused = [...names(Object.keys(projectLock.npm))].filter((n) =>
  !names(Object.keys(operatorLock.npm)).has(n)
);

Deno.test("the project's lockfile has packages the operator does not use (so the checks below can fail)", () => {
  for (const n of ["fast-check", "kubernetes-models", "@kubernetes-models/istio", "ajv"]) {
    assert.ok(unused.includes(n), `${n}: ${unused.join(" ")}`);
  }
});

Deno.test("deploy/operator/deno.json imports exactly the npm packages the operator's graph reaches, at the project's versions", async () => {
  const imports = await operatorImports();
  assert.deepEqual(Object.values(imports).sort(), await graphRoots());
  const project = (await readJson<{ imports: Record<string, string> }>("deno.json")).imports;
  for (const [name, specifier] of Object.entries(imports)) {
    assert.equal(specifier, project[name], `${name} as in deno.json`);
  }
});

Deno.test("deploy/operator/deno.lock is deno.lock cut to those packages and what they depend on", async () => {
  const text = await Deno.readTextFile(join(ROOT, "deploy/operator/deno.lock"));
  assert.equal(text, await expectedOperatorLock(), "stale: run ./deno run -A tools/image/lock.ts");
  const reached = closure(projectLock, await graphRoots());
  assert.deepEqual(Object.keys(operatorLock.npm).sort(), reached);
  for (const [key, entry] of Object.entries(operatorLock.npm)) {
    assert.equal(entry.integrity, projectLock.npm[key].integrity, key);
  }
  const shipped = names(reached);
  assert.deepEqual(unused.filter((n) => shipped.has(n)), []);
});

/** The package names under the embedded npm folder of `deno compile`'s "Embedded Files" tree. */
function embeddedPackages(listing: string): string[] {
  const lines = listing.split("\n");
  const start = lines.findIndex((l) => l.includes(".deno_compile_node_modules"));
  assert.ok(start >= 0, listing);
  const out: string[] = [];
  let scope = "";
  // Depth is the column of the branch; the packages hang two levels under the npm folder.
  const depthOf = (l: string) => l.search(/[├└]/) / 2;
  const base = depthOf(lines[start]) + 2;
  for (const line of lines.slice(start + 2)) {
    const m = /[├└]─[─┬] (\S+)/.exec(line);
    if (!m || depthOf(line) < base) break;
    const token = m[1].replace(/\/\*$/, "");
    if (depthOf(line) === base) {
      scope = token.startsWith("@") && !token.includes("/") ? token : "";
      if (!scope) {
        out.push(
          token.startsWith("@") ? token.split("/").slice(0, 2).join("/") : token.split("/")[0],
        );
      }
    } else if (depthOf(line) === base + 1 && scope) {
      out.push(`${scope}/${token.split("/")[0]}`);
    }
  }
  return out.sort();
}

Deno.test("deno compile, as deno task compile runs it, embeds only the operator's packages", async () => {
  const task = (await readJson<{ tasks: Record<string, string> }>("deno.json")).tasks.compile;
  const args = task.split(" && ").find((c) => c.startsWith("deno compile"))!.split(/\s+/).slice(1);
  assert.equal(args[args.indexOf("--config") + 1], OPERATOR_CONFIG);
  const dir = await Deno.makeTempDir({ prefix: "compile-graph-" });
  try {
    args[args.indexOf("-o") + 1] = join(dir, "platform-operator");
    // DENORT_BIN: this deno stands in for the runtime, so compile needs no download; the file
    // it writes is not the operator (a full deno runs its own CLI), but it lists what is embedded.
    const out = await new Deno.Command(Deno.execPath(), {
      args,
      cwd: ROOT,
      env: { DENORT_BIN: Deno.execPath(), NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.ok(out.success, text);
    const embedded = embeddedPackages(text);
    const allowed = names(Object.keys(operatorLock.npm));
    assert.deepEqual(embedded.filter((n) => !allowed.has(n)), [], "only the operator's packages");
    // What the operator loads at run time is there (client-node for exec users, yaml).
    const loaded = names(closure(operatorLock, [
      "npm:@kubernetes/client-node@2.0.1",
      "npm:yaml@2.9.1",
    ]));
    assert.deepEqual([...loaded].filter((n) => !embedded.includes(n)), []);
    assert.ok(!embedded.includes("zod"), "zod is imported for types only: not embedded");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
