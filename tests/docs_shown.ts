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
