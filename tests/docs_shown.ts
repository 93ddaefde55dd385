/** The commands a Markdown page shows in its ```console blocks, and the output shown for each. */

/** A `$ command` of a console block and the lines shown after it. */
export interface Shown {
  page: string;
  command: string;
  output: string[];
}

/** The commands of the ```console blocks of a Markdown text. */
export function shownCommands(page: string, text: string): Shown[] {
  const out: Shown[] = [];
  const blocks = text.matchAll(/^```console\n([\s\S]*?)^```$/gm);
  for (const [, body] of blocks) {
    let current: Shown | undefined;
    const lines = body.replace(/\n$/, "").split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line.startsWith("$ ")) {
        let command = line.slice(2);
        while (command.endsWith("\\") && i + 1 < lines.length) {
          command = `${command.slice(0, -1).trimEnd()} ${lines[++i].trim()}`;
        }
        current = { page, command, output: [] };
        out.push(current);
        continue;
      }
      current?.output.push(line.trimEnd());
    }
  }
  return out;
}

/** The output `page` shows for `command` (repository-relative page); throws when it shows none. */
export async function shownOutput(page: string, command: string): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(`../${page}`, import.meta.url));
  const found = shownCommands(page, text).find((s) => s.command === command);
  if (!found) throw new Error(`${page} shows no \`${command}\``);
  return found.output;
}

/** Where a page shows a command. */
export type CommandForm = "console" | "sh" | "synopsis" | "inline";

/** A command a page shows, as a reader would copy it (continuations joined, comments dropped). */
export interface PageCommand {
  page: string;
  command: string;
  form: CommandForm;
}

/** Lines that start a command in a block that is not marked as commands: they must not be there. */
const COMMAND_START = /^(\$ |\.\/deno |deno |kubectl |docker |bash |go |cd )/;

/**
 * Every command `text` shows: the `$` lines of ```console blocks, the lines of ```sh blocks, the
 * lines of indented code blocks (synopses), and inline code that runs something (`./deno ...`,
 * `bash ...`). Throws when a fenced block of another language has a line that starts a command,
 * so a command cannot hide from the test that checks each one is run.
 */
export function pageCommands(page: string, text: string): PageCommand[] {
  const out: PageCommand[] = shownCommands(page, text).map((s) => ({
    page,
    command: s.command,
    form: "console" as const,
  }));
  const lines = text.split("\n");
  let fence: string | undefined;
  let indented: PageCommand | undefined;
  let prose = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const open = /^```(\w*)\s*$/.exec(line);
    if (fence === undefined && open) {
      fence = open[1];
      indented = undefined;
      continue;
    }
    if (fence !== undefined) {
      if (line.startsWith("```")) fence = undefined;
      else if (fence === "sh" && line.trim() && !line.trim().startsWith("#")) {
        out.push({ page, command: line.trim(), form: "sh" });
      } else if (fence !== "console" && fence !== "sh" && COMMAND_START.test(line.trim())) {
        throw new Error(`${page}:${i + 1}: a command in a \`\`\`${fence} block: ${line.trim()}`);
      }
      continue;
    }
    const code = /^( {4,})(\S.*)$/.exec(line);
    const blockStart = code && (i === 0 || lines[i - 1].trim() === "" || indented);
    if (code && blockStart && !/^\s*([-*]|\d+\.) /.test(lines[i - 1] ?? "")) {
      const command = code[2].replace(/\s+#.*$/, "").trimEnd();
      if (indented && code[1].length > 4) indented.command += ` ${command}`;
      else out.push(indented = { page, command, form: "synopsis" });
      continue;
    }
    indented = undefined;
    prose += `${line}\n`;
  }
  for (const [, span] of prose.replace(/\n/g, " ").matchAll(/`([^`]+)`/g)) {
    if (/^(\.\/deno |bash )/.test(span)) out.push({ page, command: span, form: "inline" });
  }
  return out;
}
