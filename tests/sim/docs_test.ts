/**
 * docs/simulation.md: every command it shows (each line of its `sh` blocks) runs here as written,
 * from the repository root, and does what the page says; no command appears anywhere else on the
 * page (its `text` blocks are sample output).
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PAGE = "docs/simulation.md";

interface Block {
  lang: string;
  lines: string[];
}

function blocks(text: string): { blocks: Block[]; prose: string } {
  const out: Block[] = [];
  let prose = "";
  let open: Block | undefined;
  for (const line of text.split("\n")) {
    const fence = /^```(\w*)\s*$/.exec(line);
    if (fence && !open) open = { lang: fence[1], lines: [] };
    else if (fence && open) {
      out.push(open);
      open = undefined;
    } else if (open) open.lines.push(line);
    else prose += `${line}\n`;
  }
  return { blocks: out, prose };
}

async function sh(command: string): Promise<{ code: number; lines: string[] }> {
  const [exe, ...args] = command.split(/\s+/);
  const out = await new Deno.Command(exe, {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).trimEnd().split("\n");
  return { code: out.code, lines };
}

const page = blocks(await Deno.readTextFile(`${ROOT}${PAGE}`));
const commands = page.blocks.filter((b) => b.lang === "sh").flatMap((b) =>
  b.lines.filter((l) => l.trim() !== "")
);

Deno.test(`${PAGE}: commands are only in sh blocks, one a line, each a ./deno task`, () => {
  assert.ok(commands.length >= 5, commands.join("\n"));
  for (const c of commands) assert.match(c, /^\.\/deno task sim( --?[\w-]+( [\w-]+)?)*$/);
  assert.doesNotMatch(page.prose, /deno task sim --/);
  for (const b of page.blocks) assert.ok(["sh", "text"].includes(b.lang), `block ${b.lang}`);
});

/** What each documented command must show, by its arguments. */
function check(command: string, r: { code: number; lines: string[] }): void {
  const why = `${command}:\n${r.lines.join("\n")}`;
  assert.equal(r.code, 0, why);
  if (command.endsWith("--help")) {
    for (const flag of ["--workers N", "--window DAY", "unfinished"]) {
      assert.ok(r.lines.some((l) => l.includes(flag)), `${flag} in ${why}`);
    }
    return;
  }
  if (command.includes("--json")) {
    const objs = r.lines.map((l) => JSON.parse(l));
    assert.equal(objs.length, 1, why);
    assert.equal(objs[0].outcome, "passed");
    assert.ok(objs[0].timeline.length > 0);
    return;
  }
  const seeds = Number(/--seeds (\d+)/.exec(command)![1]);
  const workers = /--workers (\d+)/.exec(command)?.[1];
  const summary = new RegExp(
    `^${seeds} passed, 0 failed, 0 unfinished \\(0 scenarios, ${seeds} sweep seeds, ` +
      `${workers ?? "\\d+"} workers?;`,
  );
  assert.match(r.lines.at(-1)!, summary, why);
  if (command.includes("--window 2026-11-22")) {
    assert.equal(r.lines[0], `window 2026-11-22: seeds 4155800..${4155800 + seeds - 1}`);
  }
}

Deno.test(`${PAGE}: every command runs as shown`, async () => {
  const outputs = new Map<string, string[]>();
  for (const c of commands) {
    const r = await sh(c);
    check(c, r);
    outputs.set(c, r.lines);
  }
  // "the same lines, in the same order": 2 workers and 1 differ only in the summary.
  const two = outputs.get("./deno task sim --seed 1 --seeds 20 --workers 2");
  const one = outputs.get("./deno task sim --seed 1 --seeds 20 --workers 1");
  assert.ok(two && one);
  assert.deepEqual(two.slice(0, -1), one.slice(0, -1));
});
