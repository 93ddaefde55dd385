/**
 * Which Envoy stats a Pod's Istio proxy exports, as far as the Pod itself says. Istio's proxies
 * export a small default set; more only when the stats inclusion names them. For each of prefixes,
 * suffixes and regexps, Istio (pilot-agent's bootstrap, `getStatsOptions`) takes the Pod's
 * annotation `sidecar.istio.io/statsInclusion<Kind>` (a comma-separated list) when it is set, and
 * otherwise the proxy config's `proxyStatsMatcher.inclusion<Kind>` — the Pod's own
 * `proxy.istio.io/config` merged over the mesh-wide default, which no Pod shows. So a `false` here
 * means "not named by the Pod", never "certainly hidden". Read leniently: malformed means absent.
 */
import { at, isObject } from "./json.ts";

/** The Pod annotation with Istio's per-Pod proxy config (YAML or JSON of a ProxyConfig). */
export const PROXY_CONFIG_ANNOTATION = "proxy.istio.io/config";

/** The three kinds of stats inclusion, and their Pod annotations. */
export const STATS_INCLUSION_ANNOTATIONS = {
  Prefixes: "sidecar.istio.io/statsInclusionPrefixes",
  Suffixes: "sidecar.istio.io/statsInclusionSuffixes",
  Regexps: "sidecar.istio.io/statsInclusionRegexps",
} as const;

type Kind = keyof typeof STATS_INCLUSION_ANNOTATIONS;
const KINDS = Object.keys(STATS_INCLUSION_ANNOTATIONS) as Kind[];

/** A quoted YAML scalar unquoted, a plain one trimmed of a trailing comment. */
function scalar(s: string): string {
  const t = s.trim();
  const q = t.match(/^(["'])(.*)\1$/);
  return q ? q[2] : t.replace(/\s+#.*$/, "").trim();
}

/**
 * The `proxyStatsMatcher.inclusion<kind>` lists of a ProxyConfig written as JSON, or as YAML with
 * block (`- item`) or flow (`[a, b]`) sequences, which is how Istio's docs write it. Anything else
 * YAML allows (anchors, multi-line scalars) reads as no list.
 */
function proxyConfigLists(text: string): Partial<Record<Kind, string[]>> {
  const lists: Partial<Record<Kind, string[]>> = {};
  try {
    const matcher = at(JSON.parse(text), "proxyStatsMatcher");
    for (const k of KINDS) {
      const v = at(matcher, `inclusion${k}`);
      if (Array.isArray(v)) lists[k] = v.filter((x): x is string => typeof x === "string");
    }
    return lists;
  } catch {
    // Not JSON: read it as YAML below.
  }
  const lines = text.split("\n");
  const indent = (l: string) => l.length - l.trimStart().length;
  const start = lines.findIndex((l) => /^\s*proxyStatsMatcher:\s*(#.*)?$/.test(l));
  if (start < 0) return lists;
  const base = indent(lines[start]);
  for (let i = start + 1; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === "" || line.trim().startsWith("#")) continue;
    if (indent(line) <= base) break;
    const m = line.match(/^\s*inclusion(Prefixes|Suffixes|Regexps):\s*(.*)$/);
    if (!m) continue;
    const kind = m[1] as Kind;
    const flow = m[2].trim().match(/^\[(.*)\]$/);
    if (flow) {
      lists[kind] = flow[1].split(",").map(scalar).filter((s) => s !== "");
      continue;
    }
    const items: string[] = [];
    for (let j = i + 1; j < lines.length; j++) {
      const item = lines[j].match(/^(\s*)-\s+(.*)$/);
      if (!item || item[1].length < indent(line)) break;
      items.push(scalar(item[2]));
      i = j;
    }
    lists[kind] = items;
  }
  return lists;
}

/** Envoy's StringMatcher: prefix and suffix as written, a regexp matching the whole name (RE2). */
function matches(kind: Kind, pattern: string, stat: string): boolean {
  if (kind === "Prefixes") return stat.startsWith(pattern);
  if (kind === "Suffixes") return stat.endsWith(pattern);
  try {
    return new RegExp(`^(?:${pattern})$`).test(stat);
  } catch {
    return false;
  }
}

/**
 * True when the Pod's annotations make its proxy export the Envoy stat `stat` (a name such as
 * `http_local_rate_limiter.http_local_rate_limit.ok`); false when they do not name it, which may
 * still be exported by a mesh-wide `proxyStatsMatcher` the Pod does not show.
 */
export function podExportsStat(pod: unknown, stat: string): boolean {
  const annotations = at(pod, "metadata", "annotations");
  if (!isObject(annotations)) return false;
  const config = annotations[PROXY_CONFIG_ANNOTATION];
  const fromConfig = typeof config === "string" ? proxyConfigLists(config) : {};
  return KINDS.some((kind) => {
    const own = annotations[STATS_INCLUSION_ANNOTATIONS[kind]];
    const list = typeof own === "string" && own.length > 0
      ? own.split(",")
      : fromConfig[kind] ?? [];
    return list.some((p) => p !== "" && matches(kind, p, stat));
  });
}
