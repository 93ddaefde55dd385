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
