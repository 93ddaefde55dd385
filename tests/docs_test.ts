/**
 * The `deno task ratelimit` and `deno task sim` commands shown in README.md and docs/*.md are run
 * here, and their output must be what the page shows (the simulator's wall-clock speed aside).
 * Every other command in docs/ is a kubectl command that an end-to-end test runs and compares
 * with the page (E2E_CHECKED); README's other commands (kubectl, the local control plane) are run
 * by the end-to-end tests.
 */
import assert from "node:assert/strict";
import { main as ratelimit } from "../src/cli/ratelimit.ts";
import { runSim } from "../src/cli/sim.ts";
import { type Shown, shownCommands } from "./docs_shown.ts";

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
  else if (argv[2] === "sim") code = await runSim(argv.slice(3), put);
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

Deno.test("docs: every command on docs/ pages is run here or by the e2e test that checks it", async () => {
  const docs = all.filter((s) => s.page.startsWith("docs/"));
  assert.ok(docs.length >= 4, `only ${docs.length} commands in docs/`);
  for (const s of docs) {
    if (/^\.\/deno task (ratelimit|sim) /.test(s.command)) continue;
    const test = E2E_CHECKED[s.page];
    assert.ok(test && s.command.startsWith("kubectl "), `${s.page}: ${s.command}: run by nothing`);
    const source = await Deno.readTextFile(new URL(test, ROOT));
    assert.ok(
      source.replace(/\s+/g, "").includes(
        `shownOutput("${s.page}",\`${s.command.replace(NS_OF, "${NS}")}\``.replace(/\s+/g, ""),
      ),
      `${test} does not compare \`${s.command}\` with ${s.page}`,
    );
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
