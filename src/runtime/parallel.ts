/** Bounded concurrency for a list of independent async calls. */

/**
 * `fn` of every item, at most `width` in flight at once, each result at its item's index. A
 * rejection rejects the whole (the calls already started still run to their end).
 */
export async function inParallel<T, R>(
  items: readonly T[],
  width: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return out;
}
