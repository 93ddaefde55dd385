/** Small file helpers of the tools: whether a path exists, the tail of a log. */

/** Returns true when `path` exists. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Last `lines` lines of a text file (empty string when missing). */
export async function tailFile(path: string, lines = 30): Promise<string> {
  try {
    const text = await Deno.readTextFile(path);
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/**
 * Writes `text` to `path` through a file beside it renamed over it, so that another process
 * reading `path` meanwhile (tests run in lanes) sees the old content or the new, never a part.
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const partial = `${path}.${crypto.randomUUID().slice(0, 8)}.partial`;
  try {
    await Deno.writeTextFile(partial, text);
    await Deno.rename(partial, path);
  } finally {
    await Deno.remove(partial).catch(() => {});
  }
}
