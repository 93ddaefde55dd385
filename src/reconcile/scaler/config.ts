/**
 * From a parsed Scaler spec to what each KEDA component gets (docs/design.md "Scaler"): checked
 * resources, merged env, pod annotations and logging flags. Problems that make the spec impossible
 * to apply are errors (ValidationErr); things applied differently than asked are warnings (Warning).
 */
import { type FieldError, formatPath, show } from "../../api/issues.ts";
import {
  type EnvVar,
  SCALER_COMPONENTS,
  type ScalerComponent,
  type ScalerSpec,
} from "../../api/scaler.ts";
import { canonicalQuantity, compareQuantities, parseQuantity } from "../../api/quantity.ts";
import { isQualifiedName } from "../../api/selector.ts";

/** KEDA's own resources for each component when the spec sets none (KEDA's release manifest). */
export const DEFAULT_RESOURCES = {
  limits: { cpu: "1", memory: "1000Mi" },
  requests: { cpu: "100m", memory: "100Mi" },
} as const;

/** Env entries KEDA relies on that a user entry may not replace (the Pod's identity). */
export const PROTECTED_ENV = ["POD_NAME", "POD_NAMESPACE", "OPERATOR_NAME"] as const;

/** Components whose containers get `spec.env` (the admission webhooks keep their own environment). */
export const ENV_COMPONENTS: readonly ScalerComponent[] = ["operator", "metricServer"];

/** Pod annotation keys a user cannot set: the operator's own domain, and what `spec.istio` controls. */
export function reservedAnnotation(key: string): string | undefined {
  const slash = key.indexOf("/");
  const prefix = slash < 0 ? "" : key.slice(0, slash);
  if (prefix === "platform-project.io" || prefix.endsWith(".platform-project.io")) {
    return "the platform-project.io prefix is reserved for the operator";
  }
  if (key === "sidecar.istio.io/inject") return "sidecar injection is set by spec.istio";
  return undefined;
}

/** A resource list with canonical quantities: what a container's `resources.limits` or `.requests` holds. */
export type ResourceList = { cpu: string; memory: string };

/** What one component gets. */
export interface ComponentConfig {
  args: { level: string; encoder: string; timeEncoding: string };
  resources: { limits: ResourceList; requests: ResourceList };
  /** User env entries to merge into the component's own (empty for components without env). */
  env: EnvVar[];
  annotations: Record<string, string>;
  sidecar: boolean;
}

/** The result of checking a spec. */
export type KedaConfig =
  | { ok: true; components: Record<ScalerComponent, ComponentConfig>; warnings: string[] }
  | { ok: false; errors: FieldError[] };

function resources(
  spec: ScalerSpec,
  c: ScalerComponent,
  errors: FieldError[],
): ComponentConfig["resources"] {
  const given = spec.resources?.[c];
  const out: ComponentConfig["resources"] = {
    limits: { ...DEFAULT_RESOURCES.limits },
    requests: { ...DEFAULT_RESOURCES.requests },
  };
  for (const list of ["limits", "requests"] as const) {
    for (const res of ["cpu", "memory"] as const) {
      const text = given?.[list]?.[res];
      if (text === undefined) continue;
      const path = `spec.resources.${c}.${list}.${res}`;
      const canonical = canonicalQuantity(text);
      const q = parseQuantity(text);
      if (canonical === undefined || q === undefined) {
        errors.push({
          path,
          message: `${show(text)} is not a quantity in range, like 100m, 1 or 512Mi`,
        });
      } else if (q.n < 0n) errors.push({ path, message: `${show(text)} must not be negative` });
      else out[list][res] = canonical;
    }
  }
  for (const res of ["cpu", "memory"] as const) {
    const req = parseQuantity(out.requests[res]);
    const lim = parseQuantity(out.limits[res]);
    if (!req || !lim || compareQuantities(req, lim) <= 0) continue;
    const asked = given?.requests?.[res];
    // A limit below KEDA's default request lowers the request, as Kubernetes defaults requests to limits.
    if (asked === undefined) {
      out.requests[res] = out.limits[res];
      continue;
    }
    const limitIsDefault = given?.limits?.[res] === undefined;
    errors.push({
      path: `spec.resources.${c}.requests.${res}`,
      message:
        `${show(asked)} is above the ${limitIsDefault ? "default " : ""}limit ${
          out.limits[res]
        }; ` +
        `raise spec.resources.${c}.limits.${res} or lower the request`,
    });
  }
  return out;
}

function envEntries(spec: ScalerSpec, errors: FieldError[], warnings: string[]): EnvVar[] {
  const out: EnvVar[] = [];
  const seen = new Set<string>();
  (spec.env ?? []).forEach((e, i) => {
    const path = `spec.env[${i}]`;
    if (!/^[\x20-\x3c\x3e-\x7e]+$/.test(e.name)) {
      errors.push({
        path: `${path}.name`,
        message: `${show(e.name)} is not a valid variable name (printable ASCII without =)`,
      });
      return;
    }
    if (seen.has(e.name)) {
      errors.push({ path: `${path}.name`, message: `${show(e.name)} is listed more than once` });
      return;
    }
    seen.add(e.name);
    const sources = Object.values(e.valueFrom ?? {}).filter((s) => s !== undefined).length;
    if (e.value !== undefined && e.valueFrom !== undefined) {
      errors.push({
        path,
        message: `${show(e.name)} has both value and valueFrom; set one of them`,
      });
      return;
    }
    if (e.valueFrom !== undefined && sources !== 1) {
      errors.push({
        path: `${path}.valueFrom`,
        message: `must name exactly one source, not ${sources}`,
      });
      return;
    }
    const divisor = e.valueFrom?.resourceFieldRef?.divisor;
    if (divisor !== undefined && canonicalQuantity(divisor) === undefined) {
      errors.push({
        path: `${path}.valueFrom.resourceFieldRef.divisor`,
        message: `${show(divisor)} is not a quantity`,
      });
      return;
    }
    if ((PROTECTED_ENV as readonly string[]).includes(e.name)) {
      warnings.push(`env ${e.name} was not changed: KEDA needs the value the operator sets`);
      return;
    }
    out.push(e);
  });
  return out;
}

function annotations(
  spec: ScalerSpec,
  c: ScalerComponent,
  errors: FieldError[],
  warnings: string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (
    const [key, value] of Object.entries(spec.podAnnotations?.[c] ?? {}).sort((
      [a],
      [b],
    ) => (a < b ? -1 : 1))
  ) {
    if (!isQualifiedName(key)) {
      errors.push({
        path: formatPath(["spec", "podAnnotations", c, key]),
        message:
          "is not a valid annotation key (an optional DNS prefix and /, then at most 63 letters, digits, " +
          "'-', '_' or '.', starting and ending with a letter or digit)",
      });
      continue;
    }
    const why = reservedAnnotation(key);
    if (why) warnings.push(`pod annotation ${key} of ${c} was dropped: ${why}`);
    else out[key] = value;
  }
  return out;
}

/** Checks a Scaler spec and works out each component's configuration. */
export function kedaConfig(spec: ScalerSpec): KedaConfig {
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  const env = envEntries(spec, errors, warnings);
  const components = {} as Record<ScalerComponent, ComponentConfig>;
  for (const c of SCALER_COMPONENTS) {
    const log = spec.logging[c];
    components[c] = {
      args: {
        level: log.level,
        encoder: log.format === "text" ? "console" : log.format,
        timeEncoding: log.timeEncoding,
      },
      resources: resources(spec, c, errors),
      env: ENV_COMPONENTS.includes(c) ? env : [],
      annotations: annotations(spec, c, errors, warnings),
      sidecar: c === "admissionWebhook" ? false : spec.istio?.[c]?.enabledSidecarInjection ?? false,
    };
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, components, warnings };
}
