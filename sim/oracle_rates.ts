/**
 * The oracle's check of what a RateLimit's status says the limit in force does (its mode and the
 * workload's rate), against the EnvoyFilter in place, read here on its own rather than with the
 * reducer's reader so a wrong reader cannot agree with itself.
 */
import type { KubeObject } from "../src/api/object.ts";

/**
 * A RateLimit's `status.mode` and default bucket's `status.rates` must describe the filter in
 * force, not the spec (a refused update may differ): Shadow exactly when the filter enforces 0%,
 * and the workload's rate its tokens_per_fill times the Pods with a sidecar.
 */
export function modeAndRateProblem(rl: KubeObject, f: KubeObject): string | undefined {
  const s = rl.status as
    | { mode?: string; podsWithSidecar?: number; rates?: { workload?: string }[] }
    | undefined;
  const patches = (f.spec as { configPatches?: { applyTo?: string; patch?: unknown }[] })
    .configPatches ?? [];
  const cfg =
    patches.filter((p) => p.applyTo === "HTTP_ROUTE").map((p) =>
      (p.patch as { value?: { typed_per_filter_config?: Record<string, unknown> } })?.value
        ?.typed_per_filter_config?.["envoy.filters.http.local_ratelimit"] as {
          filter_enforced?: { default_value?: { numerator?: number } };
          token_bucket?: { tokens_per_fill?: number; fill_interval?: string };
        } | undefined
    )[0];
  const mode = cfg?.filter_enforced?.default_value?.numerator === 0 ? "Shadow" : "Enforcing";
  if (s?.mode !== mode) {
    return `RateLimit ${rl.metadata.namespace}/${rl.metadata.name}: status.mode ${
      JSON.stringify(s?.mode)
    }, its filter is ${mode}`;
  }
  const tb = cfg?.token_bucket;
  const seconds = Number(/^(\d+)s$/.exec(tb?.fill_interval ?? "")?.[1]);
  const per = seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`;
  const want = `${(tb?.tokens_per_fill ?? 0) * (s.podsWithSidecar ?? 0)}/${per}`;
  const got = s.rates?.[0]?.workload;
  if (got !== want) {
    return `RateLimit ${rl.metadata.namespace}/${rl.metadata.name}: status.rates[0].workload ${
      JSON.stringify(got)
    }, its filter and ${s.podsWithSidecar} Pods with a sidecar admit ${want}`;
  }
  return undefined;
}
