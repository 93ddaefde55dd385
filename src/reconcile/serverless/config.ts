/**
 * The Serverless configuration check (docs/design.md): the spec's plain strings become the settings in
 * use, or field errors that name the field and the value.
 */
import { goDurationProblem, parseGoDuration } from "../../api/duration.ts";
import { type FieldError, show } from "../../api/issues.ts";
import type { ServerlessSpec } from "../../api/serverless.ts";

/** Publisher proxy used when `spec.eventing` is not set. */
export const DEFAULT_EVENTING_ENDPOINT =
  "http://eventing-publisher-proxy.platform-system.svc.cluster.local/publish";
/** Trace collector used when `spec.tracing` is not set. */
export const DEFAULT_TRACING_ENDPOINT =
  "http://telemetry-otlp-traces.platform-system.svc.cluster.local:4318/v1/traces";
/** Runtime Pod presets, smallest first. */
export const POD_PRESETS = ["XS", "S", "M", "L", "XL"] as const;
/** Preset used when `spec.defaultRuntimePodPreset` is not set. */
export const DEFAULT_POD_PRESET = "M";
/** Log levels the Serverless controller accepts (zap's). */
export const SERVERLESS_LOG_LEVELS = [
  "debug",
  "info",
  "warn",
  "error",
  "dpanic",
  "panic",
  "fatal",
] as const;
/** Log formats the Serverless controller accepts. */
export const SERVERLESS_LOG_FORMATS = ["json", "console"] as const;

/** The settings in use: the spec with every default filled and every value checked. */
export interface ServerlessSettings {
  eventingEndpoint: string;
  tracingEndpoint: string;
  functionRequeueDuration: string;
  healthzLivenessTimeout: string;
  defaultRuntimePodPreset: string;
  logLevel: string;
  logFormat: string;
}

/** The result of the configuration check. */
export type ConfigCheck = { ok: true; settings: ServerlessSettings } | {
  ok: false;
  errors: FieldError[];
};

function checkUrl(path: string, value: string, errors: FieldError[]): void {
  let url: URL | undefined;
  try {
    url = /\s/.test(value) ? undefined : new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
    errors.push({
      path,
      message: `${show(value)} is not an absolute http(s) URL such as http://host:port/path`,
    });
  }
}

/** Checks a positive Go duration; `parsed` is what is parsed, `value` what the user wrote. */
function checkDuration(
  path: string,
  value: string,
  parsed: string,
  examples: string,
  errors: FieldError[],
): void {
  const ms = parseGoDuration(parsed);
  if (ms === undefined) {
    const otherwise = `${show(value)} is not a duration such as ${examples}`;
    errors.push({
      path,
      message: goDurationProblem(parsed, otherwise, show(value))!,
    });
  } else if (ms <= 0) {
    errors.push({ path, message: `${show(value)} must be longer than zero` });
  }
}

function checkOneOf(
  path: string,
  value: string,
  allowed: readonly string[],
  errors: FieldError[],
): void {
  if (!allowed.includes(value)) {
    errors.push({ path, message: `${show(value)} is not one of ${allowed.join(", ")}` });
  }
}

/** `10` (seconds, as docs/design.md allows) becomes `10s`; durations are kept as written. */
function livenessTimeout(value: string): string {
  return /^[0-9]+$/.test(value) ? `${Number(value)}s` : value;
}

/** Checks a Serverless spec and fills its defaults. */
export function checkConfiguration(spec: ServerlessSpec): ConfigCheck {
  const errors: FieldError[] = [];
  if (spec.eventing) checkUrl("spec.eventing.endpoint", spec.eventing.endpoint, errors);
  if (spec.tracing) checkUrl("spec.tracing.endpoint", spec.tracing.endpoint, errors);
  const requeue = spec.functionRequeueDuration;
  checkDuration("spec.functionRequeueDuration", requeue, requeue, "300ms, 5m or 1h30m", errors);
  const timeout = livenessTimeout(spec.healthzLivenessTimeout);
  const examples = "10s or 1m, or a number of seconds such as 10";
  checkDuration(
    "spec.healthzLivenessTimeout",
    spec.healthzLivenessTimeout,
    timeout,
    examples,
    errors,
  );
  const preset = spec.defaultRuntimePodPreset ?? DEFAULT_POD_PRESET;
  checkOneOf("spec.defaultRuntimePodPreset", preset, POD_PRESETS, errors);
  checkOneOf("spec.logLevel", spec.logLevel, SERVERLESS_LOG_LEVELS, errors);
  checkOneOf("spec.logFormat", spec.logFormat, SERVERLESS_LOG_FORMATS, errors);
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    settings: {
      eventingEndpoint: spec.eventing?.endpoint ?? DEFAULT_EVENTING_ENDPOINT,
      tracingEndpoint: spec.tracing?.endpoint ?? DEFAULT_TRACING_ENDPOINT,
      functionRequeueDuration: spec.functionRequeueDuration,
      healthzLivenessTimeout: timeout,
      defaultRuntimePodPreset: preset,
      logLevel: spec.logLevel,
      logFormat: spec.logFormat,
    },
  };
}

/** The `Configured` message: whether default or custom publisher and collector URLs are used. */
export function configuredMessage(s: ServerlessSettings): string {
  const kind = (value: string, def: string) => (value === def ? "default" : "custom");
  return `Configured with ${
    kind(s.eventingEndpoint, DEFAULT_EVENTING_ENDPOINT)
  } Publisher Proxy URL and ` +
    `${kind(s.tracingEndpoint, DEFAULT_TRACING_ENDPOINT)} Trace Collector URL.`;
}

/** The status fields that show the settings in use (docs/design.md status table). */
export function settingsStatus(s: ServerlessSettings): Record<string, string> {
  return {
    eventingEndpoint: s.eventingEndpoint,
    tracingEndpoint: s.tracingEndpoint,
    functionRequeueDuration: s.functionRequeueDuration,
    healthzLivenessTimeout: s.healthzLivenessTimeout,
    defaultRuntimePodPreset: s.defaultRuntimePodPreset,
    logLevel: s.logLevel,
    logFormat: s.logFormat,
    eventPublisherProxyURL: s.eventingEndpoint,
    traceCollectorURL: s.tracingEndpoint,
  };
}

/** The names of the status fields `settingsStatus` writes. */
export const SETTINGS_STATUS_FIELDS: readonly string[] = Object.keys(
  settingsStatus({
    eventingEndpoint: "",
    tracingEndpoint: "",
    functionRequeueDuration: "",
    healthzLivenessTimeout: "",
    defaultRuntimePodPreset: "",
    logLevel: "",
    logFormat: "",
  }),
);
