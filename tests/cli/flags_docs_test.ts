/**
 * The operator's flags against the table of docs/operations.md (the one headed `Flag | Variables |
 * Default`), both ways: every flag `run` takes is a row naming the variables it reads, in order,
 * and every row is a flag `run` takes.
 */
import assert from "node:assert/strict";
import { envName, RUN_FLAGS } from "../../src/cli/run_flags.ts";

/** A row of the flag table: the flags its first cell names and the variables of its second. */
export interface FlagRow {
  flags: string[];
  env: string[];
}

/**
 * The rows of the table headed `| Flag | Variables | Default |` in a Markdown text. A variable
 * written `…` is the flag's own `PLATFORM_OPERATOR_<FLAG>`; `--no-x` beside `--x` is its negation.
 */
export function documentedFlags(markdown: string): FlagRow[] {
  const lines = markdown.split("\n");
  const head = lines.findIndex((l) => /^\|\s*Flag\s*\|\s*Variables\s*\|\s*Default\s*\|$/.test(l));
  if (head < 0) throw new Error("no table headed | Flag | Variables | Default |");
  const rows: FlagRow[] = [];
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith("|")) break;
    const [, flagCell, envCell] = line.split("|").map((c) => c.trim());
    const flags = [...flagCell.matchAll(/`--([a-z0-9-]+)/g)].map((m) => m[1]);
    if (flags.length === 0) throw new Error(`a row names no flag: ${line}`);
    const own = envName(flags[0]);
    const env = envCell.split(",").map((v) => v.trim()).map((v) => v === "…" ? own : v);
    const negation = (f: string) => f.startsWith("no-") && flags.includes(f.slice(3));
    rows.push({ flags: flags.filter((f) => !negation(f)), env });
  }
  return rows;
}

Deno.test("docs/operations.md's flag table lists every flag of run, with its variables, and no other", async () => {
  const rows = documentedFlags(
    await Deno.readTextFile(new URL("../../docs/operations.md", import.meta.url)),
  );
  const documented = new Map(rows.flatMap((r) => r.flags.map((f) => [f, r.env] as const)));
  const problems: string[] = [];
  for (const f of RUN_FLAGS) {
    const env = documented.get(f.name);
    if (!env) problems.push(`--${f.name} is not in the table`);
    else if (env.join(", ") !== f.env.join(", ")) {
      problems.push(`--${f.name} reads ${f.env.join(", ")}; the table says ${env.join(", ")}`);
    }
  }
  for (const name of documented.keys()) {
    if (!RUN_FLAGS.some((f) => f.name === name)) {
      problems.push(`the table lists --${name}, which run does not take`);
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("documentedFlags reads a row's flags (a negation is not one) and its variables", () => {
  const md = [
    "| Flag | Variables | Default |",
    "| --- | --- | --- |",
    "| `--leader-elect[=BOOL]`, `--no-leader-elect` | PLATFORM_OPERATOR_LEADER_ELECT | true |",
    "| `--serverless-image` | …, IMAGE_SERVERLESS_CONTROLLER | x |",
    "",
    "| Other | table |",
  ].join("\n");
  assert.deepEqual(documentedFlags(md), [
    { flags: ["leader-elect"], env: ["PLATFORM_OPERATOR_LEADER_ELECT"] },
    {
      flags: ["serverless-image"],
      env: ["PLATFORM_OPERATOR_SERVERLESS_IMAGE", "IMAGE_SERVERLESS_CONTROLLER"],
    },
  ]);
});
