/**
 * Reading what a command is given: a file, or stdin for `-` (as `kubectl apply -f -`), with an
 * error that names the file in plain words instead of the system's.
 */

/** The text of `path`, or of stdin when `path` is `-`; throws an InputError naming the file. */
export async function readInput(
  path: string,
  stdin: () => Promise<string> = readStdin,
): Promise<string> {
  if (path === "-") return await stdin();
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    throw new InputError(`${path}: ${plainly(err)}`);
  }
}

/** Writes `text` to `path`; throws an InputError naming the file. */
export async function writeOutput(path: string, text: string): Promise<void> {
  try {
    await Deno.writeTextFile(path, text);
  } catch (err) {
    throw new InputError(`${path}: ${plainly(err)}`);
  }
}

/** A file that could not be read or written, said plainly. */
export class InputError extends Error {}

/** All of stdin as text. */
export async function readStdin(): Promise<string> {
  return await new Response(Deno.stdin.readable).text();
}

function plainly(err: unknown): string {
  if (err instanceof Deno.errors.NotFound) return "no such file";
  if (err instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (err instanceof Deno.errors.IsADirectory) return "is a directory, not a file";
  const message = err instanceof Error ? err.message : String(err);
  // Deno's messages end in "(os error N): readfile 'path'"; the path is already said.
  return message.replace(/\s*\(os error \d+\).*$/s, "");
}
