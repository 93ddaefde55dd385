/**
 * Reads to a bound: a file the operator is pointed at (a kubeconfig, a certificate, a token) and a
 * body an endpoint answers (istiod's, the rate limit engine's). A wrong path to a device or a
 * large file (`--kubeconfig=/dev/zero`, a disk image), or an endpoint that answers without end,
 * gives an error instead of being read until memory runs out. File text is decoded as
 * `Deno.readTextFile` decodes it.
 */

/** The most bytes of a file read: far more than any kubeconfig, certificate or token holds. */
export const SMALL_FILE_MAX_BYTES = 16 * 1024 * 1024;

const CHUNK = 64 * 1024;

/** `chunks` one after the other, in one array. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Reads a body up to `max` bytes; undefined when it is longer. */
export async function readBounded(res: Response, max: number): Promise<Uint8Array | undefined> {
  const reader = res.body?.getReader();
  if (!reader) return new Uint8Array();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      await reader.cancel();
      return undefined;
    }
    parts.push(value);
  }
  return concatBytes(parts);
}

function tooLarge(path: string, max: number): Error {
  return new Error(
    `${path} has more than ${max} bytes, more than a kubeconfig, certificate or token holds`,
  );
}

/** The text of `path`, read synchronously; throws past `max` bytes. */
export function readSmallFileSync(path: string, max = SMALL_FILE_MAX_BYTES): string {
  using file = Deno.openSync(path);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const buf = new Uint8Array(CHUNK);
    const n = file.readSync(buf);
    if (n === null) break;
    total += n;
    if (total > max) throw tooLarge(path, max);
    chunks.push(buf.subarray(0, n));
  }
  return new TextDecoder().decode(concatBytes(chunks));
}

/** The text of `path`; throws past `max` bytes. */
export async function readSmallFile(path: string, max = SMALL_FILE_MAX_BYTES): Promise<string> {
  // The file's stream closes it at its end, and when the read past `max` cancels it.
  const file = await Deno.open(path);
  const bytes = await readBounded(new Response(file.readable), max);
  if (bytes === undefined) throw tooLarge(path, max);
  return new TextDecoder().decode(bytes);
}
