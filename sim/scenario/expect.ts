/** Checks of scenario expectations against the simulated cluster and the data-plane responses. */
import type { MeshResponse } from "../../src/dataplane/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { matchesLabels } from "../cluster/selector.ts";
import type { Simulation } from "../simulation.ts";
import {
  type Expectation,
  EXPECTED_FIELDS,
  type RequestStep,
  type ResponseExpectation,
} from "./format.ts";
import { firstDifference } from "./match.ts";

/** `Kind namespace/name` of an expectation for messages (`*` when it names no object). */
export function expectationRef(e: { kind: string; namespace?: string; name?: string }): string {
  return `${e.kind} ${e.namespace ? `${e.namespace}/` : ""}${e.name ?? "*"}`;
}

/**
 * The part of an object an expectation names, for `firstDifference`: its object fields as
 * written, with `labels` under metadata and `conditions` under status.
 */
export function expectedObject(e: Expectation): Record<string, unknown> {
  const expected: Record<string, unknown> = {};
  for (const k of EXPECTED_FIELDS) if (e[k] !== undefined) expected[k] = e[k];
  if (e.labels) expected.metadata = { ...e.metadata, labels: e.labels };
  if (e.conditions) {
    expected.status = { ...e.status, conditions: e.conditions };
  }
  return expected;
}

/** The status a `seen: true` expectation looks for in an object's history: `status` and `conditions`. */
export function expectedSeenStatus(e: Expectation): Record<string, unknown> {
  return {
    ...e.status,
    ...(e.conditions ? { conditions: e.conditions } : {}),
  };
}

/** The first condition of `obj` whose type the expectation's `noConditions` lists, as a message. */
export function unwantedCondition(e: Expectation, obj: unknown): string | undefined {
  const status = obj !== null && typeof obj === "object"
    ? (obj as { status?: { conditions?: { type: string }[] } }).status
    : undefined;
  const unwanted = (status?.conditions ?? []).find((c) => e.noConditions?.includes(c.type));
  return unwanted
    ? `status.conditions: expected no ${unwanted.type} condition, got ${JSON.stringify(unwanted)}`
    : undefined;
}

function summary(o: KubeObject): string {
  const s = o.status as {
    state?: string;
    conditions?: { type: string; status: string; reason: string }[];
  } | undefined;
  const conds = (s?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`).join(", ");
  return s?.state ? `state ${s.state}${conds ? ` [${conds}]` : ""}` : "no state";
}

/** The first difference between an expectation and the cluster now; undefined when it holds. */
export function checkExpectation(sim: Simulation, e: Expectation): string | undefined {
  const store = sim.cluster.store;
  const type = e.apiVersion
    ? store.types.byKind(e.apiVersion, e.kind)
    : store.types.byKindName(e.kind);
  if (e.count !== undefined || e.name === undefined) {
    const all = type ? store.objects(type, e.namespace) : [];
    const matching = all.filter((o) => !e.labels || matchesLabels(e.labels, o.metadata.labels));
    const want = e.count ?? 1;
    return matching.length === want
      ? undefined
      : `${expectationRef(e)}: count: expected ${want}, got ${matching.length}`;
  }
  if (e.seen) return checkSeen(sim, e);
  const obj = type ? store.get(type, e.namespace, e.name) : undefined;
  if (e.absent) {
    return obj
      ? `${expectationRef(e)}: expected absent, but it exists (${summary(obj)})`
      : undefined;
  }
  if (!obj) {
    return `${expectationRef(e)}: expected to exist, but it does not${
      type ? "" : ` (kind ${e.kind} is not served)`
    }`;
  }
  const diff = firstDifference(expectedObject(e), obj) ?? unwantedCondition(e, obj);
  return diff ? `${expectationRef(e)}: ${diff}` : undefined;
}

/** `seen: true`: some status the object had so far matches `status` and `conditions`. */
function checkSeen(sim: Simulation, e: Expectation): string | undefined {
  const history = sim.statusHistory.get(`${e.kind} ${e.namespace}/${e.name}`) ?? [];
  const expected = expectedSeenStatus(e);
  if (history.some((s) => firstDifference(expected, s) === undefined)) return undefined;
  const rows = history.map((s) => summary({ status: s } as unknown as KubeObject));
  return `${expectationRef(e)}: no status so far matched ${
    JSON.stringify(expected)
  }; statuses seen: ${rows.length ? rows.join(" | ") : "none"}`;
}

/** The first difference between a response and its expectation. */
export function checkResponse(e: ResponseExpectation, r: MeshResponse): string | undefined {
  const expected: Record<string, unknown> = {};
  if (e.status !== undefined) expected.status = e.status;
  if (e.body !== undefined) expected.body = e.body;
  if (e.bucket !== undefined) expected.bucket = e.bucket;
  if (e.client !== undefined) expected.client = e.client;
  if (e.route !== undefined) expected.route = e.route;
  if (e.rejected !== undefined) expected.rejected = e.rejected ? true : undefined;
  if (e.wouldReject !== undefined) expected.wouldReject = e.wouldReject ? true : undefined;
  if (e.upstreamHeaders) expected.upstreamHeaders = e.upstreamHeaders;
  if (e.headers) {
    expected.headers = Object.fromEntries(
      Object.entries(e.headers).map(([k, v]) => [k.toLowerCase(), v]),
    );
  }
  return firstDifference(expected, r);
}

/** `GET /headers -> demo {app=httpbin}` for messages. */
export function describeRequest(r: RequestStep): string {
  const to = r.to === "gateway"
    ? "gateway"
    : `${r.to.namespace} {${Object.entries(r.to.labels).map(([k, v]) => `${k}=${v}`).join(",")}}`;
  const headers = r.headers
    ? ` ${Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`).join(", ")}`
    : "";
  return `${r.method ?? "GET"} ${r.path}${headers}${r.peer ? ` from ${r.peer}` : ""} -> ${to}${
    r.viaGateway ? " via gateway" : ""
  }`;
}
