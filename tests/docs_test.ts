/**
 * Every command README.md and docs/*.md show (docs_shown.ts finds them: console and sh blocks,
 * synopses, inline `./deno ...`) is run by a test, and this file knows which. The `deno task
 * ratelimit` and `deno task sim` commands of console blocks run here, and their output must be
 * what the page shows (the simulator's wall-clock speed aside); the kubectl commands of
 * docs/ratelimit-status.md run in an end-to-end test that compares them with the page
 * (E2E_CHECKED); every other command has its test in RUN_BY. A command added to a page without
 * one fails here.
 */
import assert from "node:assert/strict";
import { main as ratelimit } from "../src/cli/ratelimit/mod.ts";
import { runSim } from "../src/cli/sim.ts";
import { pageCommands, type Shown, shownCommands } from "./docs_shown.ts";

const ROOT = new URL("../", import.meta.url);

/** Splits a command line like a shell would (quotes, no expansion). */
function words(command: string): string[] {
  const out: string[] = [];
  for (const [, a, b, c] of command.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) out.push(a ?? b ?? c);
  return out;
}

/** Runs a shown command through the CLI's own entry points; the lines it prints, in order. */
async function runShown(command: string): Promise<string[] | undefined> {
  const echo = /; echo "exit \$\?"$/.exec(command);
  const argv = words(echo ? command.slice(0, echo.index) : command);
  if (argv[0] !== "./deno" || argv[1] !== "task") return undefined;
  const lines: string[] = [];
  const put = (l: string) => lines.push(...l.split("\n"));
  let code: number;
  if (argv[2] === "ratelimit") code = await ratelimit(argv.slice(3), { out: put, err: put });
  else if (argv[2] === "sim") code = await runSim(argv.slice(3), { out: put, err: put });
  else return undefined;
  if (echo) lines.push(`exit ${code}`);
  return lines;
}

/** The simulator's speed depends on the machine. */
function steady(lines: string[]): string[] {
  return lines.map((l) =>
    l.replace(/ in [0-9.]+s: [0-9]+ virtual s a wall s\)$/, " in Ts: N virtual s a wall s)")
  );
}

/** README.md and the pages of docs/. */
async function pages(): Promise<string[]> {
  const out = ["README.md"];
  for await (const e of Deno.readDir(new URL("docs/", ROOT))) {
    if (e.isFile && e.name.endsWith(".md")) out.push(`docs/${e.name}`);
  }
  return out.sort();
}

const all: Shown[] = [];
for (const page of await pages()) {
  all.push(...shownCommands(page, await Deno.readTextFile(new URL(page, ROOT))));
}
const cwd = Deno.cwd();

/** Pages whose kubectl commands an end-to-end test runs and compares with the page. */
const E2E_CHECKED: Record<string, string> = {
  "docs/ratelimit-status.md": "tests/e2e/ratelimit_test.ts",
};

/**
 * Who runs each other command a page shows: the test (or CI script) and what in it runs the
 * command (whitespace aside). `command` is the command as shown, or a pattern for a family.
 */
const RUN_BY: { page: string | RegExp; command: string | RegExp; by: string; runs: string }[] = [
  // README: what `./deno task dev` prints; the e2e test runs every kubectl line dev prints, and
  // tests/dev_print_test.ts checks README shows lines dev prints.
  {
    page: "README.md",
    command: /^export KUBECONFIG=/,
    by: "tests/dev_print_test.ts",
    runs: "tryLines(",
  },
  {
    page: "README.md",
    command: /^kubectl get /,
    by: "tests/e2e/dev_test.ts",
    runs: "for (const command of tried) await sh(",
  },
  {
    page: "README.md",
    command: "./deno task dev",
    by: "tests/e2e/dev_test.ts",
    // devTest (tests/e2e/dev_process.ts) runs `./deno task dev` with these arguments.
    runs: '"e2e: ./deno task dev starts everything, its printed commands work, Ctrl-C stops it", ' +
      "{ args: [],",
  },
  {
    page: /^(README|docs\/testing)\.md$/,
    command: "./deno task dev --real-node",
    by: "tests/e2e/dev_real_node_test.ts",
    runs: '"e2e: ./deno task dev --real-node prints how to use the node, and that works", ' +
      '{ args: ["--real-node"]',
  },
  // The test command is what CI runs; CI is `.ci/run`.
  { page: /./, command: "./deno task test", by: ".ci/run", runs: "./deno task test --junit-path" },
  { page: /./, command: "./deno task build", by: ".ci/run", runs: "step ./deno task build" },
  {
    page: "docs/testing.md",
    command: /^\.\/deno task test --/,
    by: "tests/tools/test_lanes_test.ts",
    runs: "shown test commands run",
  },
  {
    page: /./,
    command: /^\.\/deno task build --/,
    by: "tests/tools/build_test.ts",
    runs: "shown build commands run",
  },
  { page: "README.md", command: "bash .ci/run", by: ".ci/run", runs: "step ./deno fmt --check" },
  // `./deno task sim` alone: every scenario, then the seed sweep (the same runs, through the CLI's functions).
  {
    page: "README.md",
    command: "./deno task sim",
    by: "tests/sim/sweep_test.ts",
    runs: "seeds from ${from} with swarm faults",
  },
  {
    page: "README.md",
    command: "./deno run -A mod.ts --help",
    by: "tests/docs_commands_test.ts",
    runs: "/mod\\.ts --help$/",
  },
  {
    page: "README.md",
    command: "./deno task <name>",
    by: "tests/docs_commands_test.ts",
    runs: "/^\\.\\/deno task <name>$/",
  },
  {
    page: "docs/benchmarks.md",
    command: /^\.\/deno (task bench |run -A --cpu-prof |run -A bench\/(profile|plot)\.ts )/,
    by: "tests/docs_commands_test.ts",
    runs: '["docs/benchmarks.md", ',
  },
  {
    page: "docs/design.md",
    command: "./deno task module-crds",
    by: "tests/modules/module_crds_test.ts",
    runs: '"./deno task module-crds",',
  },
  {
    page: "docs/modules.md",
    command: /^\.\/deno task module-crds/,
    by: "tests/modules/module_crds_test.ts",
    runs: "every command docs/modules.md shows runs",
  },
  {
    page: "docs/istio-check.md",
    command: /./,
    by: "tests/istio/istio_docs_test.ts",
    runs: "await shBlocks()",
  },
  {
    page: /^docs\/(operations|testing)\.md$/,
    command: /^\.\/deno task (start|compile|deploy)\b/,
    by: "tests/docs_commands_test.ts",
    runs: '"docs/operations.md", /^\\.\\/deno task ',
  },
  {
    page: "docs/operations.md",
    command: /^(\(cd deploy && kustomize edit|kubectl apply -k deploy\/$)/,
    by: "tests/docs_commands_test.ts",
    runs: "kustomize edit set image, then what kubectl apply -k deploy/ sends",
  },
  // No denort download here: the test checks the default target is the compile task's binary;
  // the image test builds the same Dockerfile's deno-runtime target.
  {
    page: "docs/operations.md",
    command: /^docker build /,
    by: "tests/docs_commands_test.ts",
    runs: "docker build is the compile task",
  },
  {
    page: /^(README|docs\/\w+)\.md$/,
    command: "./deno task image",
    by: "tests/deploy/image_test.ts",
    runs: "record = await buildImage(",
  },
  {
    page: "docs/ratelimit.md",
    command: /^\.\/deno task ratelimit -f RATELIMIT/,
    by: "tests/docs_commands_test.ts",
    runs: '["docs/ratelimit.md", ',
  },
  {
    page: "docs/scenarios.md",
    command: /^\.\/deno task sim \[/,
    by: "tests/docs_commands_test.ts",
    runs: '["docs/scenarios.md", ',
  },
  // The replay lines a failing run prints, run in that form by the CLI tests.
  {
    page: "docs/scenarios.md",
    command: "./deno task sim sim/scenarios/x.yaml --seed 4",
    by: "tests/sim/cli_test.ts",
    runs: 'run([file, "--seed", "4"])',
  },
  {
    page: "docs/scenarios.md",
    command: "./deno task sim --seed 188",
    by: "tests/sim/docs_test.ts",
    runs: "every command runs as shown",
  },
  {
    page: "docs/simulation.md",
    command: /^\.\/deno task sim /,
    by: "tests/sim/docs_test.ts",
    runs: 'const PAGE = "docs/simulation.md"',
  },
  {
    page: "docs/testing.md",
    command: /^\.\/deno task cluster /,
    by: "tests/docs_commands_test.ts",
    runs: '["docs/testing.md", /^\\.\\/deno task cluster',
  },
  // `./deno task test` runs tests/, which holds tests/e2e/ (the e2e task's files): checked below.
  { page: "docs/testing.md", command: "./deno task e2e", by: ".ci/run", runs: "./deno task test" },
];

/** The commands of every page. */
const commands = (await Promise.all(
  (await pages()).map(async (page) =>
    pageCommands(page, await Deno.readTextFile(new URL(page, ROOT)))
  ),
)).flat();

Deno.test("docs: every command README and docs/ show is run by a test that says so", async () => {
  assert.ok(commands.length >= 50, `only ${commands.length} commands found`);
  for (const c of commands) {
    const where = `${c.page} (${c.form}): ${c.command}`;
    if (c.form === "console" && /^\.\/deno task (ratelimit|sim) /.test(c.command)) continue;
    const e2e = E2E_CHECKED[c.page];
    if (e2e && c.command.startsWith("kubectl ")) {
      const source = await Deno.readTextFile(new URL(e2e, ROOT));
      assert.ok(
        source.replace(/\s+/g, "").includes(
          `shownOutput("${c.page}",\`${c.command.replace(NS_OF, "${NS}")}\``.replace(/\s+/g, ""),
        ),
        `${e2e} does not compare \`${c.command}\` with ${c.page}`,
      );
      continue;
    }
    const entry = RUN_BY.find((e) =>
      (e.page instanceof RegExp ? e.page.test(c.page) : e.page === c.page) &&
      (typeof e.command === "string" ? e.command === c.command : e.command.test(c.command))
    );
    assert.ok(entry, `${where}: run by no test; add the test and its entry to RUN_BY`);
    const source = await Deno.readTextFile(new URL(entry.by, ROOT));
    assert.ok(
      source.replace(/\s+/g, "").includes(entry.runs.replace(/\s+/g, "")),
      `${where}: ${entry.by} does not contain ${entry.runs}`,
    );
  }
});

Deno.test("docs: ./deno task test runs everything ./deno task e2e does", async () => {
  const tasks = (JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))) as {
    tasks: Record<string, string>;
  }).tasks;
  const dirs = (task: string) => task.split(/\s+/).filter((w) => w.endsWith("/"));
  for (const dir of dirs(tasks.e2e)) {
    assert.ok(dirs(tasks.test).some((t) => dir.startsWith(t)), `${dir} is not under ${tasks.test}`);
  }
});

/** The e2e tests write their namespace as `${NS}`. */
const NS_OF = /e2e-rl-status/g;

for (const s of all.filter((x) => /^\.\/deno task (ratelimit|sim) /.test(x.command))) {
  Deno.test(`docs: ${s.page}: ${s.command}`, async () => {
    Deno.chdir(new URL(".", ROOT));
    try {
      const got = await runShown(s.command);
      assert.ok(got, "not a command this test runs");
      assert.deepEqual(steady(got), steady(s.output));
    } finally {
      Deno.chdir(cwd);
    }
  });
}

Deno.test("docs: every repository path README and docs/ name in backticks exists", async () => {
  const pages = [
    "README.md",
    ...[...Deno.readDirSync(new URL("docs/", ROOT))]
      .filter((e) => e.isFile && e.name.endsWith(".md")).map((e) => `docs/${e.name}`),
  ];
  const missing: string[] = [];
  for (const page of pages) {
    const text = await Deno.readTextFile(new URL(page, ROOT));
    for (
      const [, path] of text.matchAll(
        /`((?:src|sim|tools|tests|bench|deploy|crds|samples)\/[\w./-]+)`/g,
      )
    ) {
      const clean = path.replace(/[.,:;]+$/, "").replace(/\/$/, "");
      if (/[*<>]/.test(clean)) continue;
      try {
        Deno.statSync(new URL(clean, ROOT));
      } catch {
        missing.push(`${page}: ${clean}`);
      }
    }
  }
  assert.deepEqual(missing, []);
});
