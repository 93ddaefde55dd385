/**
 * Reading what a command is given: a file, or stdin for `-` (as `kubectl apply -f -`), as UTF-8
 * text of at most 3 MiB (src/api/yaml.ts says why), with an error that names the file in plain
 * words instead of the system's. Every command that reads a file reads it here.
 */
import { decodeUtf8, MAX_INPUT_BYTES, tooLarge } from "../api/yaml.ts";
import { concatBytes } from "../kube/bounded_read.ts";

/** What stdin gives: its bytes (or text, from tests), read to the end or past `limit` bytes. */
export type StdinReader = (limit: number) => Promise<Uint8Array | string>;

/**
 * The text of `path`, or of stdin when `path` is `-`: throws an InputError naming the file when
 * it cannot be read (exit 1), and a RefusedInput when it is too large or not UTF-8 (exit 2).
 */
export async function readInput(path: string, stdin: StdinReader = readStdin): Promise<string> {
  const name = path === "-" ? "stdin" : path;
  let bytes: Uint8Array | string;
  if (path === "-") bytes = await stdin(MAX_INPUT_BYTES);
  else {
    try {
      const info = await Deno.stat(path);
      if (info.isDirectory) throw new Deno.errors.IsADirectory();
      if (info.size > MAX_INPUT_BYTES) throw new RefusedInput(tooLarge(info.size, name).error);
      // Read as a stream, bounded: a device or a pipe (`/dev/zero`, `<(...)`) has no size.
      const file = await Deno.open(path);
      bytes = await readToLimit(file.readable, MAX_INPUT_BYTES);
    } catch (err) {
      if (err instanceof RefusedInput) throw err;
      throw new InputError(`${path}: ${plainly(err)}`);
    }
  }
  if (typeof bytes === "string") bytes = new TextEncoder().encode(bytes);
  const text = decodeUtf8(bytes, name);
  if (!text.ok) throw new RefusedInput(text.error);
  return text.value;
}

/** Writes `text` to `path`, or to `out` when `path` is `-`; throws an InputError naming the file. */
export async function writeOutput(
  path: string,
  text: string,
  out: (text: string) => void = (t) => console.log(t),
): Promise<void> {
  if (path === "-") {
    out(text.endsWith("\n") ? text.slice(0, -1) : text);
    return;
  }
  try {
    await Deno.writeTextFile(path, text);
  } catch (err) {
    throw new InputError(`${path}: ${plainly(err)}`);
  }
}

/** A file that could not be read or written, said plainly (exit status 1). */
export class InputError extends Error {}

/** An input that was read but is refused: too large, or not UTF-8 (exit status 2). */
export class RefusedInput extends Error {}

/**
 * The bytes of stdin, read until its end, or until past `limit` (then what was read so far, one
 * chunk over the limit, so the caller can refuse it without reading a stream that never ends).
 */
export function readStdin(limit: number): Promise<Uint8Array> {
  return readToLimit(Deno.stdin.readable, limit, false);
}

/**
 * The bytes of `stream` until its end or until past `limit`; the stream is closed after, unless
 * `close` is false (stdin stays open for the rest of the process).
 */
async function readToLimit(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  close = true,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  try {
    while (size <= limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    if (close) await reader.cancel().catch(() => {});
    else reader.releaseLock();
  }
  return concatBytes(chunks);
}

function plainly(err: unknown): string {
  if (err instanceof Deno.errors.NotFound) return "no such file";
  if (err instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (err instanceof Deno.errors.IsADirectory) return "is a directory, not a file";
  const message = err instanceof Error ? err.message : String(err);
  // Deno's messages end in "(os error N): readfile 'path'"; the path is already said.
  return message.replace(/\s*\(os error \d+\).*$/s, "");
}
