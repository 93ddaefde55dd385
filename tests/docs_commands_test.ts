/**
 * The commands README.md and docs/ show that no other test runs, run here as the page shows them,
 * from the repository root. Where a page shows a synopsis (`./deno task sim [FILE...] [--seed N]`)
 * its `--help` form runs and must offer every option the synopsis names. `./deno task compile`
 * runs for real and must get through type-checking and the module graph; here it then stops at
 * downloading Deno's `denort` runtime (no network), and that must be the only failure.
 * tests/docs_test.ts knows which test runs each command a page shows.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { goEnv } from "../tools/cluster/build.ts";
import { DEPLOY, loadKustomization } from "./deploy/kustomize.ts";
import { type PageCommand, pageCommands } from "./docs_shown.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** Runs `command` with sh in `cwd` (default: the repository root); exit code and both outputs. */
async function sh(command: string, cwd = ROOT, env: Record<string, string> = {}) {
  const out = await new Deno.Command("sh", {
    args: ["-c", command],
    cwd,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** The commands a page shows (repository-relative page). */
async function commandsOf(page: string): Promise<PageCommand[]> {
  return pageCommands(page, await Deno.readTextFile(join(ROOT, page)));
}

/** The command of `page` that `pick` finds (shown once, or the same each time). */
async function shown(page: string, pick: RegExp): Promise<string> {
  const found = new Set(
    (await commandsOf(page)).filter((c) => pick.test(c.command)).map((c) => c.command),
  );
  assert.equal(found.size, 1, `${page}: ${pick}: ${[...found].join("; ")}`);
  return [...found][0];
}

/** The options (`--x`) and alternatives (`a|b`) a synopsis names after the task's name. */
function synopsisWords(synopsis: string): string[] {
  const rest = synopsis.replace(/^\.\/deno task \S+/, "");
  const flags = [...rest.matchAll(/--[\w-]+/g)].map((m) => m[0]);
  const choices = [...rest.matchAll(/(?:^|\s)([a-z]+(?:\|[a-z]+)+)/g)].flatMap((m) =>
    m[1].split("|")
  );
  return [...flags, ...choices];
}

const SYNOPSES: [page: string, pick: RegExp][] = [
  ["docs/scenarios.md", /^\.\/deno task sim \[/],
  ["docs/ratelimit.md", /^\.\/deno task ratelimit -f RATELIMIT/],
  ["docs/benchmarks.md", /^\.\/deno task bench \[/],
  ["docs/operations.md", /^\.\/deno task start \[flags\]$/],
  ["docs/testing.md", /^\.\/deno task cluster build\|/],
];

for (const [page, pick] of SYNOPSES) {
  Deno.test(`docs: ${page}: the synopsis's --help form names every option it shows`, async () => {
    const synopsis = await shown(page, pick);
    const task = synopsis.split(" ")[2];
    const r = await sh(`./deno task ${task} --help`);
    const help = r.stdout + r.stderr;
    assert.equal(r.code, 0, help);
    for (const word of synopsisWords(synopsis)) {
      assert.ok(
        new RegExp(`(^|[\\s<\\[|])${word}([\\s=>\\]|]|$)`, "m").test(help),
        `${word}: ${help}`,
      );
    }
    if (task === "start") {
      // The page's table lists the flags the synopsis stands for.
      const text = await Deno.readTextFile(join(ROOT, page));
      const flags = [...text.matchAll(/^\| `(--[\w-]+)/gm)].map((m) => m[1]);
      assert.ok(flags.length >= 15, flags.join(" "));
      for (const flag of flags) {
        assert.ok(help.includes(flag), `${flag} in ./deno task start --help`);
      }
    }
  });
}

Deno.test("docs: testing.md: ./deno task cluster status and env on a directory with no cluster say so", async () => {
  assert.deepEqual(synopsisWords(await shown("docs/testing.md", /^\.\/deno task cluster /)), [
    "--dir",
    "--real-node",
    "build",
    "up",
    "down",
    "status",
    "env",
  ]);
  const dir = await Deno.makeTempDir({ prefix: "docs-cluster-" });
  try {
    for (const verb of ["status", "env"]) {
      const r = await sh(`./deno task cluster ${verb} --dir ${dir}`);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(r.stdout + r.stderr, new RegExp(`[Nn]o cluster in ${dir}`));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("docs: README.md: ./deno run -A mod.ts --help lists the commands; the tasks named are deno.json's", async () => {
  const command = await shown("README.md", /mod\.ts --help$/);
  const r = await sh(command);
  assert.equal(r.code, 0, r.stderr);
  for (const c of ["crds", "ratelimit", "run", "sim", "deploy"]) {
    assert.match(r.stdout, new RegExp(`^  ${c} `, "m"), r.stdout);
  }
  assert.match(r.stdout, /`mod\.ts <command> --help`/);
  await shown("README.md", /^\.\/deno task <name>$/);
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const listed = /`\.\/deno task <name>`: ((?:`[\w-]+`,?\s*)+)/.exec(readme)?.[1];
  assert.ok(listed, "README lists the tasks after `./deno task <name>`");
  const tasks = Object.keys(
    (JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))) as { tasks: object }).tasks,
  );
  assert.deepEqual([...listed.matchAll(/`([\w-]+)`/g)].map((m) => m[1]).sort(), tasks.sort());
});

Deno.test("docs: operations.md: ./deno task deploy --check finds deploy/ up to date", async () => {
  await shown("docs/operations.md", /^\.\/deno task deploy$/);
  const r = await sh("./deno task deploy --check");
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /up to date/);
});

Deno.test("docs: benchmarks.md: a CPU profile as shown, then bench/profile.ts over it", async () => {
  const prof = await shown("docs/benchmarks.md", /--cpu-prof /);
  const read = await shown("docs/benchmarks.md", /profile\.ts FILE\.cpuprofile$/);
  const dir = await Deno.makeTempDir({ prefix: "docs-prof-" });
  try {
    // The page's `…` is the program to profile: here the CLI's help.
    const r = await sh(`${prof.replace(".cache/prof", dir).replace("…", "mod.ts --help")}`);
    assert.equal(r.code, 0, r.stderr);
    const files = [...Deno.readDirSync(dir)].filter((e) => e.name.endsWith(".cpuprofile"));
    assert.equal(files.length, 1, files.map((f) => f.name).join(" "));
    const summary = await sh(read.replace("FILE.cpuprofile", join(dir, files[0].name)));
    assert.equal(summary.code, 0, summary.stderr);
    assert.match(summary.stdout, /self/i);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("docs: benchmarks.md: bench/plot.ts lays a later run's figures over an earlier run's", async () => {
  const command = await shown("docs/benchmarks.md", /bench\/plot\.ts FILE\.json LATER\.json/);
  const dir = await Deno.makeTempDir({ prefix: "docs-plot-" });
  try {
    const figure = (name: string, value: number) => ({ section: "control plane", name, value });
    const idle = "operator: resident memory, 0 RateLimits";
    await Deno.writeTextFile(
      join(dir, "run.json"),
      JSON.stringify({
        figures: [figure(idle, 61), figure("operator: resident memory, 100 RateLimits Ready", 70)],
      }),
    );
    await Deno.writeTextFile(
      join(dir, "later.json"),
      JSON.stringify({ figures: [figure(idle, 58)] }),
    );
    const r = await sh(
      command.replace("FILE.json", join(dir, "run.json")).replace(
        "LATER.json",
        join(dir, "later.json"),
      )
        .replace("FILE.svg", join(dir, "p.svg")),
    );
    assert.equal(r.code, 0, r.stderr);
    const svg = await Deno.readTextFile(join(dir, "p.svg"));
    assert.match(svg, /operator, 0 RateLimits: 58 MB/);
    assert.doesNotMatch(svg, /61 MB/);
    assert.match(svg, /operator, 100 RateLimits: 70 MB/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("docs: benchmarks.md: bench/plot.ts turns a control-plane run's JSON into the SVG", async () => {
  const command = await shown("docs/benchmarks.md", /bench\/plot\.ts FILE\.json --out/);
  const dir = await Deno.makeTempDir({ prefix: "docs-plot-" });
  try {
    const figure = (name: string, value: number) => ({ section: "control plane", name, value });
    const figures = [
      figure("operator: resident memory, 0 RateLimits", 70),
      figure("operator: resident memory, 1,000 RateLimits Ready", 120),
      figure("peer: resident memory, 1,000 RateLimits Ready", 125),
      figure("operator: 1,000 RateLimits on 1,000 Pods, until all Ready", 15),
      figure("peer: 1,000 RateLimits on 1,000 Pods, until all Ready", 86),
    ];
    const json = join(dir, "run.json");
    await Deno.writeTextFile(json, JSON.stringify({ figures }));
    const r = await sh(command.replace("FILE.json", json).replace("FILE.svg", join(dir, "p.svg")));
    assert.equal(r.code, 0, r.stderr);
    const svg = await Deno.readTextFile(join(dir, "p.svg"));
    assert.match(svg, /^<svg /);
    assert.match(svg, /peer, 1,000 RateLimits: 86 seconds/);
    assert.match(svg, /operator, 1,000 RateLimits: 120 MB/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("docs: operations.md: ./deno task compile type-checks and builds the graph, failing only at the denort download", async () => {
  const command = await shown("docs/operations.md", /^\.\/deno task compile$/);
  const r = await sh(command);
  const out = r.stdout + r.stderr;
  // Deno prints `Check` only when the type-check is not cached; `Compile` comes after it passed.
  assert.match(out, /^Compile src\/cli\/operator_main\.ts to dist\/platform-operator$/m, out);
  if (r.code === 0) {
    // A machine that can download the runtime gets the binary: it must run.
    const help = await sh("./dist/platform-operator --help");
    assert.equal(help.code, 0, help.stdout + help.stderr);
    return;
  }
  // Here: no network. The failure must be the runtime's download and nothing before it.
  assert.doesNotMatch(out, /TS\d{4}|Module not found|lockfile|integrity/i, out);
  const errors = out.split("\n").filter((l) => /^error/.test(l));
  assert.equal(errors.length, 1, out);
  assert.match(errors[0], /^error: Writing deno compile executable to temporary file /);
  assert.match(
    out,
    /Setting up base binary\.\n\s+1: error sending request for url \(https:\/\/dl\.deno\.land\/release\/v2\.9\.6\/denort-x86_64-unknown-linux-gnu\.zip\)/,
    out,
  );
});

Deno.test("docs: operations.md: docker build is the compile task: the Dockerfile's default target is the binary `deno task compile` builds", async () => {
  await shown("docs/operations.md", /^docker build --platform linux\/amd64 /);
  const lines = (await Deno.readTextFile(join(ROOT, "Dockerfile"))).split("\n");
  assert.deepEqual(lines.filter((l) => l.startsWith("RUN ")), [
    'RUN ["deno", "install", "--config", "deploy/operator/deno.json", "--frozen", "--entrypoint", "src/cli/operator_main.ts"]',
    'RUN ["deno", "run", "--frozen", "--no-code-cache", "--allow-read=.", "--allow-write=src,data", "--allow-run", "deploy/operator/prune.ts"]',
    'RUN ["deno", "run", "--no-config", "--allow-read=/deno-dir", "--allow-write=/deno-dir", "deploy/operator/seal_cache.ts", "/deno-dir"]',
    "RUN deno task compile && ./dist/platform-operator --help > /dev/null",
  ]);
  // Without --target, docker builds the last stage: the compiled binary's.
  const froms = lines.filter((l) => l.startsWith("FROM "));
  assert.equal(froms.at(-1), "FROM ${RUNTIME_IMAGE} AS binary");
  assert.ok(lines.includes("COPY --from=compile /app/dist/platform-operator /platform-operator"));
});

/** A kustomize built from the local control plane's pinned Go modules, or undefined without go. */
async function kustomize(): Promise<string | undefined> {
  const bin = join(ROOT, ".cache", "kustomize");
  if (await Deno.stat(join(bin, "kustomize")).then(() => true, () => false)) return bin;
  const go = await new Deno.Command("go", { args: ["version"] }).output().catch(() => undefined);
  if (!go?.success) return undefined;
  // A copy of the module, so resolving kustomize's own packages cannot touch the committed go.sum.
  const module = await Deno.makeTempDir({ prefix: "kustomize-build-" });
  try {
    for (const f of ["go.mod", "go.sum", "tools.go"]) {
      await Deno.copyFile(join(ROOT, "tools/cluster/go/k8s", f), join(module, f));
    }
    const r = await new Deno.Command("go", {
      args: ["build", "-o", join(bin, "kustomize"), "sigs.k8s.io/kustomize/kustomize/v5"],
      cwd: module,
      env: { ...goEnv(), GOFLAGS: "-mod=mod" },
    }).output();
    assert.ok(r.success, new TextDecoder().decode(r.stderr));
    return bin;
  } finally {
    await Deno.remove(module, { recursive: true });
  }
}

Deno.test("docs: operations.md: kustomize edit set image, then what kubectl apply -k deploy/ sends", async () => {
  const edit = await shown("docs/operations.md", /^\(cd deploy && kustomize edit set image /);
  const apply = await shown("docs/operations.md", /^kubectl apply -k deploy\/$/);
  const bin = await kustomize();
  if (!bin) {
    console.error(
      "\n!!! SKIPPED: no go on PATH to build kustomize (the local control plane's needs it too)\n",
    );
    return;
  }
  const copy = await Deno.makeTempDir({ prefix: "docs-deploy-" });
  try {
    // As in the repository: deploy/ takes crds/ beside it as a base.
    await sh(`cp -r ${DEPLOY} ${copy}/deploy && cp -r ${join(DEPLOY, "..", "crds")} ${copy}/crds`);
    const env = { PATH: `${bin}:${Deno.env.get("PATH")}` };
    const r = await sh(edit, copy, env);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    // `kubectl apply -k deploy/` applies what kustomize builds from the directory.
    const built = await sh(apply.replace(/^kubectl apply -k/, "kustomize build"), copy, env);
    assert.equal(built.code, 0, built.stderr);
    const docs = parseAllDocuments(built.stdout).map((d) => d.toJSON()) as {
      kind: string;
      metadata: { name: string };
      spec?: { template?: { spec?: { containers?: { image: string }[] } } };
    }[];
    const images = docs.flatMap((d) => d.spec?.template?.spec?.containers ?? []).map((c) =>
      c.image
    );
    assert.deepEqual(images, ["REGISTRY/platform-operator:TAG"]);
    // The same objects the deploy tests read from the kustomization.
    const ids = (xs: { kind: string; metadata: { name: string } }[]) =>
      xs.map((d) => `${d.kind}/${d.metadata.name}`).sort();
    assert.deepEqual(ids(docs), ids((await loadKustomization(DEPLOY)).map((m) => m.doc)));
  } finally {
    await Deno.remove(copy, { recursive: true });
  }
});
