/**
 * Field paths as the API shows them: the nested FieldsV1 object of a managedFields entry, and the
 * `.spec.replicas` form of conflict messages.
 */
import { FIELD_SEP, type FieldPath, segments } from "./fields.ts";
import { deepFreeze, isObject, type JsonObject } from "../../src/api/json.ts";

const SEP_CODE = FIELD_SEP.charCodeAt(0);

/**
 * Renders leaf paths as the API's nested FieldsV1 object, keys in the order of the sorted paths;
 * frozen, and the same object for the same paths (see renderedTrees).
 */
export function toFieldsV1(paths: Iterable<FieldPath>): JsonObject {
  const sorted = [...paths].sort();
  const key = sorted.join("\u0000");
  const known = renderedTrees.get(key);
  if (known && samePaths(known.paths, sorted)) return known.tree;
  const tree = deepFreeze(buildTree(sorted));
  if (renderedTrees.size >= RENDERED_MAX) renderedTrees.clear();
  renderedTrees.set(key, { paths: sorted, tree });
  return tree;
}

/**
 * Rendered trees by their sorted paths (frozen, so shared: a commit freezes them anyway): the Pods
 * of a Deployment, its status writes and the operator's Events own fields of the same shape over
 * and over. Bounded; a hit is checked path by path, since a field name may hold the separator.
 */
const renderedTrees = new Map<string, { paths: FieldPath[]; tree: JsonObject }>();
const RENDERED_MAX = 2048;

function samePaths(a: readonly FieldPath[], b: readonly FieldPath[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The tree of sorted paths. Sorted paths mostly share their first segments with the one before:
 * those nodes are taken from the previous path's instead of being split out and looked up again.
 */
function buildTree(sorted: readonly FieldPath[]): JsonObject {
  const root: JsonObject = {};
  let prev = "";
  /** The previous path's nodes by depth (the root first), and where each of its segments ends. */
  const nodes: JsonObject[] = [root];
  const ends: number[] = [];
  for (const path of sorted) {
    const max = Math.min(prev.length, path.length);
    let same = 0;
    while (same < max && prev.charCodeAt(same) === path.charCodeAt(same)) same++;
    // Segments of the previous path that are whole segments of this one too.
    let depth = 0;
    while (
      depth < ends.length && ends[depth] <= same &&
      (ends[depth] === path.length || path.charCodeAt(ends[depth]) === SEP_CODE)
    ) depth++;
    prev = path;
    if (depth > 0 && ends[depth - 1] === path.length) continue; // all of it is there already
    nodes.length = depth + 1;
    ends.length = depth;
    let node = nodes[depth];
    for (let start = depth === 0 ? 0 : ends[depth - 1] + 1;;) {
      const sep = path.indexOf(FIELD_SEP, start);
      const end = sep < 0 ? path.length : sep;
      const seg = path.slice(start, end);
      if (!isObject(node[seg])) node[seg] = {};
      node = node[seg] as JsonObject;
      nodes.push(node);
      ends.push(end);
      if (sep < 0) break;
      start = sep + 1;
    }
  }
  return root;
}

/** `.spec.replicas`-style rendering of a path, for conflict messages. */
export function describePath(path: FieldPath): string {
  return segments(path).filter((s) => s !== ".").map((s) =>
    s.startsWith("f:") ? `.${s.slice(2)}` : `[${s.slice(2)}]`
  ).join("");
}
