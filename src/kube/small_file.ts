/**
 * Reading a small file the operator is pointed at (a kubeconfig, a certificate, a token) up to a
 * bound: a wrong path to a device or a large file (`--kubeconfig=/dev/zero`, a disk image) gives
 * an error instead of being read until memory runs out. Text is decoded as `Deno.readTextFile`
 * decodes it.
 */

/** The most bytes read: far more than any kubeconfig, certificate or token holds. */
export const SMALL_FILE_MAX_BYTES = 16 * 1024 * 1024;

const CHUNK = 64 * 1024;

function tooLarge(path: string, max: number): Error {
  return new Error(
    `${path} has more than ${max} bytes, more than a kubeconfig, certificate or token holds`,
  );
}

function text(chunks: readonly Uint8Array[], total: number): string {
  const all = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(all);
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
  return text(chunks, total);
}

/** The text of `path`; throws past `max` bytes. */
export async function readSmallFile(path: string, max = SMALL_FILE_MAX_BYTES): Promise<string> {
  using file = await Deno.open(path);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const buf = new Uint8Array(CHUNK);
    const n = await file.read(buf);
    if (n === null) break;
    total += n;
    if (total > max) throw tooLarge(path, max);
    chunks.push(buf.subarray(0, n));
  }
  return text(chunks, total);
}
