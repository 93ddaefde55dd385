/**
 * Fitting status messages into the CRDs' limit: a list of problems (or names) is cut where it no
 * longer fits, and what was left out is counted, so a status is always written and says how much
 * more there is.
 */

/**
 * The most characters a status Condition's message may have: metav1.Condition's `maxLength`, which
 * every CRD of this project states for `status.conditions[].message`.
 */
export const CONDITION_MESSAGE_MAX = 32768;

/** How a list is joined: between items, and what it calls the items it leaves out. */
export interface ListStyle {
  /** Between two items; default `"; "`. */
  separator?: string;
  /** The items left out, in the plural; default `"problems"`. */
  noun?: string;
}

/**
 * `text` cut to at most `max` UTF-16 units without splitting a surrogate pair. The API server
 * counts characters (code points), never more than UTF-16 units, so what fits here fits there.
 */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = Math.max(0, max);
  const last = text.charCodeAt(end - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? end - 1 : end);
}

/** What stands for `n` items left out: `; and 287 more problems`, or ` and 3 more labels`. */
function moreText(n: number, style: Required<ListStyle>): string {
  if (n === 0) return "";
  const lead = style.separator.trimEnd() === ";" ? ";" : "";
  return `${lead} and ${n} more ${style.noun}`;
}

/**
 * `items` joined, all of them when they fit in `max` characters; else as many whole items as fit,
 * then how many were left out (`a; b; and 287 more problems`). When not even the first fits, the
 * first is cut and ends in `...`.
 */
export function joinWithin(items: readonly string[], max: number, style: ListStyle = {}): string {
  const s = { separator: style.separator ?? "; ", noun: style.noun ?? "problems" };
  let total = 0;
  for (const [i, item] of items.entries()) total += item.length + (i > 0 ? s.separator.length : 0);
  if (total <= max) return items.join(s.separator);
  let used = 0;
  let n = 0;
  for (; n < items.length; n++) {
    const add = items[n].length + (n > 0 ? s.separator.length : 0);
    if (used + add + moreText(items.length - n - 1, s).length > max) break;
    used += add;
  }
  if (n > 0) return items.slice(0, n).join(s.separator) + moreText(items.length - n, s);
  const more = moreText(items.length - 1, s);
  const room = max - more.length - 3;
  if (room > 0) return `${cut(items[0], room)}...${more}`;
  return cut(`${items.length} ${s.noun}`, max);
}

/**
 * A message `head + items + tail` of at most `max` characters (by default a Condition's): the
 * list gets the room that `head` and `tail` leave, and is cut with {@link joinWithin}.
 */
export function fitMessage(
  head: string,
  items: readonly string[],
  tail = "",
  max = CONDITION_MESSAGE_MAX,
): string {
  const room = max - head.length - tail.length;
  if (room >= 0) return head + joinWithin(items, room) + tail;
  // Only a head or tail longer than the limit gets here: keep what fits of all of it.
  return fitText(head + items.join("; ") + tail, max);
}

/**
 * `text` when it has at most `max` characters (by default a Condition's); else its start, then
 * how many characters were left out (`... and 1234 more characters`).
 */
export function fitText(text: string, max = CONDITION_MESSAGE_MAX): string {
  if (text.length <= max) return text;
  // The count is at most text.length, so a suffix with that many digits is room enough.
  const room = max - `... and ${text.length} more characters`.length;
  if (room <= 0) return cut(text, max);
  const kept = cut(text, room);
  return `${kept}... and ${text.length - kept.length} more characters`;
}
