/**
 * Runs a scenario: boot the world, run each step at its virtual time (apply, delete, fault, expect,
 * requests), then liveness and a quiet period. The first failed expectation, broken invariant or
 * runtime error ends the run with the first differing field.
 */
import type { EnvoyBehaviour, MeshRequest } from "../../src/dataplane/mod.ts";
import { ApiError, type Logger } from "../../src/runtime/mod.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { apiVersionOf, RESOURCES } from "../../src/api/resources.ts";
import { PLANS } from "../../src/api/validation/plans.ts";
import {
  metadataUnknownFields,
  UNKNOWN_FIELD,
  unknownFields,
} from "../../src/api/validation/unknown.ts";
import { expectQuiet, reportRun, RunFailure, type RunResult } from "../run_result.ts";
import { type FaultChoice, faultsFor, hasFaults } from "../fault_choice.ts";
import { Simulation, type SimulationOptions } from "../simulation.ts";
import { offset } from "../trace.ts";
import type { Scenario, ScenarioStep } from "./format.ts";
import { applyFault } from "./faults.ts";
import { checkExpectation, checkResponse, describeRequest } from "./expect.ts";
import { acceptedViolation } from "../oracle.ts";

/** Longest the operator may take to settle after the last step. */
export const LIVENESS_LIMIT_MS = 30 * 60_000;

/** Options of a scenario run. */
export interface ScenarioOptions {
  /** Overrides the scenario's seed. */
  seed?: number;
  /** Overrides the scenario's fault choice. */
  faults?: FaultChoice;
  /** Overrides the scenario's Envoy version. */
  envoy?: EnvoyBehaviour;
  file?: string;
  log?: Logger;
  /** The command that replays this run, given its seed. */
  replay?: (seed: number) => string;
  /** The operator under test (mutation tests pass a broken one). */
  operator?: SimulationOptions["operator"];
}

/** A step failed: the message says which field differed. */
class StepFailure extends RunFailure {}

/** Runs one scenario to completion. */
export async function runScenario(sc: Scenario, opts: ScenarioOptions = {}): Promise<RunResult> {
  const seed = opts.seed ?? sc.seed ?? 1;
  const own = sc.faults as FaultChoice | undefined;
  const chosen = faultsFor(opts.faults ?? own, seed);
  // `--faults` replaces the file's fault rates, not the standby replicas its steps may need
  // (a partitioned leader's successor): those are the scenario's cluster, not a fault.
  const standbys = opts.faults !== undefined && typeof own === "object" &&
      typeof own.standbys === "number"
    ? own.standbys
    : undefined;
  const faults = standbys === undefined ? chosen : { ...chosen, standbys };
  const envoy = opts.envoy ?? sc.envoy;
  const sim = new Simulation({
    seed,
    faults,
    log: opts.log,
    ...(envoy ? { envoy } : {}),
    ...(opts.operator ? { operator: opts.operator } : {}),
  });
  const run = {
    name: sc.name,
    file: opts.file,
    seed,
    envoy: sim.mesh.envoy.version,
    replay: opts.replay?.(seed) ?? "",
  };
  return await reportRun(sim, run, async () => {
    await sim.boot();
    if (hasFaults(faults)) sim.scheduleSwarm(sc.steps[sc.steps.length - 1].at);
    for (const [i, step] of sc.steps.entries()) {
      await sim.runUntil(step.at);
      await runStep(sim, step, i);
    }
    sim.startLiveness();
    if (!await sim.settle(LIVENESS_LIMIT_MS)) {
      throw new StepFailure(
        `liveness: the operator kept writing for ${
          LIVENESS_LIMIT_MS / 60_000
        } min after the last step`,
      );
    }
    // What the proxies took, the operator says: a limit every proxy holds is Accepted.
    const unaccepted = acceptedViolation(sim, false);
    if (unaccepted) throw new StepFailure(`liveness: ${unaccepted}`);
    await expectQuiet(sim);
  });
}

function typeFor(
  sim: Simulation,
  apiVersion: string | undefined,
  kind: string,
): ResourceType | undefined {
  const types = sim.cluster.store.types;
  return apiVersion ? types.byKind(apiVersion, kind) : types.byKindName(kind);
}

async function runStep(sim: Simulation, step: ScenarioStep, index: number): Promise<void> {
  const t = offset(sim.clock.now());
  const where = `step ${index + 1} (at ${t})`;
  const outcomes: string[] = [];
  const call = async (action: string, p: () => Promise<unknown>) => {
    let outcome = "ok";
    let error: ApiError | undefined;
    try {
      await sim.drive(p());
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      error = err;
      outcome = `${err.code} ${err.reason}: ${err.message}`;
    }
    sim.trace.add({ t, event: "step", step: index + 1, action, outcome });
    outcomes.push(outcome);
    const want = step.expectError;
    if (want) {
      if (!error) {
        throw new StepFailure(
          `${where}: ${action}: expected an error${
            want.code ? ` ${want.code}` : ""
          }, but it succeeded`,
        );
      }
      if (want.code !== undefined && want.code !== error.code) {
        throw new StepFailure(
          `${where}: ${action}: code: expected ${want.code}, got ${error.code} (${error.message})`,
        );
      }
      if (want.reason !== undefined && want.reason !== error.reason) {
        throw new StepFailure(
          `${where}: ${action}: reason: expected ${want.reason}, got ${error.reason}`,
        );
      }
      if (want.message !== undefined && !error.message.includes(want.message)) {
        throw new StepFailure(
          `${where}: ${action}: message: expected it to contain ${
            JSON.stringify(want.message)
          }, got ${JSON.stringify(error.message)}`,
        );
      }
    } else if (error) throw new StepFailure(`${where}: ${action} failed: ${outcome}`);
  };
  for (const fault of step.fault ?? []) {
    let action: string;
    try {
      action = applyFault(sim, fault);
    } catch (err) {
      throw new StepFailure(`${where}: ${(err as Error).message}`);
    }
    sim.trace.add({ t, event: "step", step: index + 1, action });
  }
  for (const obj of step.apply ?? []) {
    const o = obj as unknown as KubeObject;
    const action = `apply ${o.kind} ${
      o.metadata.namespace ? `${o.metadata.namespace}/` : ""
    }${o.metadata.name}`;
    const type = typeFor(sim, o.apiVersion, o.kind);
    const unknown = strictlyUnknown(o);
    await call(
      action,
      () =>
        !type
          ? Promise.reject(
            new ApiError(
              404,
              "NotFound",
              `the server doesn't have a resource type for ${o.apiVersion} ${o.kind}`,
            ),
          )
          : unknown
          ? Promise.reject(new ApiError(400, "BadRequest", unknown))
          : sim.user.apply(type, o, { fieldManager: "kubectl", force: true }),
    );
  }
  for (const ref of step.delete ?? []) {
    const action = `delete ${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name}`;
    const type = typeFor(sim, ref.apiVersion, ref.kind);
    await call(action, async () => {
      if (!type) {
        throw new ApiError(404, "NotFound", `the server doesn't have a resource type ${ref.kind}`);
      }
      if (!await sim.user.delete(type, ref.namespace, ref.name)) {
        throw new ApiError(404, "NotFound", `${ref.kind} "${ref.name}" not found`);
      }
    });
  }
  for (const e of step.expect ?? []) {
    const diff = checkExpectation(sim, e);
    if (diff) throw new StepFailure(`${where}: ${diff}`);
  }
  if (step.requests) runRequests(sim, step, where, t);
}

/**
 * What the API server's strict field validation (kubectl's default) refuses in an object of the
 * project's kinds: `strict decoding error: unknown field "spec.x"`, naming each. A scenario's
 * misspelt field is so an error, not a field silently pruned. Other kinds have no schema here but
 * their metadata, which is ObjectMeta in every kind.
 */
function strictlyUnknown(o: KubeObject): string | undefined {
  const plan = (["RateLimit", "Serverless", "Scaler"] as const).find((k) =>
    RESOURCES[k].kind === o.kind && o.apiVersion === apiVersionOf(RESOURCES[k])
  );
  // Other kinds: their metadata, which is ObjectMeta in every kind.
  const unknown = plan === undefined ? metadataUnknownFields(o) : unknownFields(PLANS[plan], o);
  if (unknown.length === 0) return undefined;
  return `strict decoding error: ${
    unknown.map((e) =>
      `unknown field ${JSON.stringify(e.path)}${e.message.slice(UNKNOWN_FIELD.length)}`
    ).join(", ")
  }`;
}

function runRequests(sim: Simulation, step: ScenarioStep, where: string, t: string): void {
  const sent: { label: string; status: number; response: ReturnType<Simulation["send"]> }[] = [];
  for (const r of step.requests ?? []) {
    for (let i = 0; i < r.count; i++) {
      const req: MeshRequest = {
        to: r.to,
        path: r.path,
        ...(r.headers ? { headers: r.headers } : {}),
        ...(r.method ? { method: r.method } : {}),
        ...(r.viaGateway ? { viaGateway: true } : {}),
        ...(r.peer ? { peer: r.peer } : {}),
      };
      const response = sim.send(req);
      const label = describeRequest(r);
      sim.trace.add({
        t,
        event: "response",
        request: label,
        status: response.status,
        ...(response.bucket !== undefined ? { bucket: response.bucket } : {}),
        ...(response.client !== undefined ? { client: response.client } : {}),
        ...(response.route !== undefined ? { route: response.route } : {}),
        headers: response.headers,
        ...(response.status !== 200 ? { body: response.body } : {}),
      });
      sent.push({ label, status: response.status, response });
    }
  }
  const expected = (step.expectResponses ?? []).flatMap((e) =>
    Array.from({ length: e.count }, () => e)
  );
  if (!step.expectResponses) return;
  if (expected.length !== sent.length) {
    throw new StepFailure(
      `${where}: expectResponses lists ${expected.length} responses for ${sent.length} requests`,
    );
  }
  for (const [i, e] of expected.entries()) {
    const diff = checkResponse(e, sent[i].response);
    if (diff) throw new StepFailure(`${where}: response ${i + 1} (${sent[i].label}): ${diff}`);
  }
}
