/**
 * The one lifecycle of a singleton module resource (Serverless, Scaler): a module is data and a
 * few hooks (`ModuleLifecycle`), and `reconcileModule` runs its passes, each one Plan.
 *
 * A duplicate reports itself and installs nothing; the served object first claims (`served:
 * "True"`, the claimed row, finalizer) so that no two objects install at once; then each pass
 * checks the configuration, applies what is not observed yet, prunes what is no longer rendered,
 * reports a failed apply from the last outcome, and verifies the module's Deployments. Deletion
 * waits for the user's objects, deletes every installed object, and removes the finalizer once
 * nothing is left.
 */
import type { ModuleImages } from "../../api/images.ts";
import { errorLines, type ParseResult } from "../../api/issues.ts";
import { fitMessage } from "../../api/message.ts";
import type { KubeObject } from "../../api/object.ts";
import { type ConditionInput, rowFor, type StateRow } from "../conditions.ts";
import { ownerLabelValue } from "../labels.ts";
import type { ApplyOutcome, ObjectRef, Plan } from "../plan.ts";
import type { ClaimInput } from "./claim.ts";
import { decisionPlan, duplicateDecision, type ModuleDecision } from "./decision.ts";
import { deletionDecision, deletionPhase } from "./deletion.ts";
import { finalized, type FinalizerChange } from "../finalizer.ts";
import { diffInstalled, type InstallDiff, isInSync, pendingFailure } from "./install_diff.ts";
import { moduleReadiness } from "./readiness.ts";
import { REQUEUE_MS } from "./requeue.ts";
import { claimingPlan, classifyModuleObject, type ModuleMeta } from "./singleton.ts";
import type { UpstreamCrd } from "../upstream_crds.ts";

/** Namespace for a module's objects when its module object has none (in a cluster it always has one). */
export const DEFAULT_MODULE_NAMESPACE = "platform-system";

/** Everything a module reducer reads. */
export interface ModuleInput {
  /** The module object as read from the cluster, unparsed: the reducer reports what is wrong with it. */
  object: unknown;
  /** Every object of the kind in the cluster, the reconciled one included or not. */
  peers: readonly unknown[];
  /** The module's claim Lease: where it lives and what is observed there. */
  claim: ClaimInput;
  /** Observed objects carrying the module's `managedLabels`. */
  installed: readonly KubeObject[];
  /** User objects that block deletion, by kind, as sorted `namespace/name`: `{ Function: ["a/f"] }`. */
  userObjects: Readonly<Record<string, readonly string[]>>;
  /** Epoch milliseconds. */
  now: number;
  images: ModuleImages;
  /** The upstream CRDs the module installs, as upstream makes them (loaded by the controller). */
  crds: readonly UpstreamCrd[];
  /** What happened to the writes of the previous Plan for this object (fed back by the runtime). */
  lastOutcome?: ApplyOutcome;
  /**
   * What the operator's own cluster DNS lookups found (DNSLookup objects, src/api/cluster_dns.ts);
   * absent or empty when it did not ask (outside a cluster): then nothing is said of DNS.
   */
  lookups?: readonly KubeObject[];
}

/** What one pass shows: the row (by reason, and by state where a reason has two rows), its message. */
export interface Step {
  reason: string;
  state?: string;
  message: string;
  /** Replaces the conditions the configuration sets besides the row's own (`configured`). */
  also?: readonly ConditionInput[];
  /** When to look again, if the step says (`serving`'s); otherwise the lifecycle's interval. */
  requeueAfterMs?: number;
}

/** Where a module installs: its namespace and the owner label value of its module object. */
export interface InstallTarget {
  namespace: string;
  owner: string;
}

/** A module kind as data and hooks. `Spec` is its parsed spec, `Config` its checked configuration. */
export interface ModuleLifecycle<Spec, Config> {
  /** The kind, as messages name it: `Serverless`. */
  kind: string;
  /** The state table: every status the reducer writes is one of its rows. */
  states: readonly StateRow[];
  finalizer: string;
  /** How deletion messages name what is deleted (`KEDA's objects`) and the module (`KEDA`). */
  deletion: { objects: string; module: string };
  /** Status fields carried over from the old status when a pass sets none. */
  keptFields?: readonly string[];
  /** The Deployments whose rollout is the module's readiness, in its namespace. */
  deployments: readonly string[];
  /** The reason of an invalid object or configuration. */
  invalid: string;
  /** The reason of a duplicate. */
  duplicate: string;
  /** The pass that has just claimed: the next one installs. */
  claimed: Step;
  parse(raw: unknown): ParseResult<{ spec: Spec }>;
  /** Checks the spec and works out the configuration. */
  configure(spec: Spec): ParseResult<Config>;
  render(
    config: Config,
    target: InstallTarget,
    images: ModuleImages,
    crds: readonly UpstreamCrd[],
  ): KubeObject[];
  /**
   * Status fields every served pass shows, from the installed objects (`undefined` namespace: any)
   * and the status the object shows now (`shown`, to keep a field no object confirms anew).
   */
  statusFields?(
    installed: readonly KubeObject[],
    namespace: string | undefined,
    shown: Readonly<Record<string, unknown>>,
  ): Record<string, unknown>;
  /** What a valid configuration adds to every pass after it: status fields, conditions. */
  configured?(config: Config): Pick<ModuleDecision, "fields" | "also">;
  /** The reason when the write that failed (if the outcome names it) is still pending. */
  failed(ref: ObjectRef | undefined): string;
  /** The pass that applies or prunes. */
  applying(diff: InstallDiff, config: Config, object: unknown): Step;
  /** A rollout that gave up (`message` says which Deployment and why). */
  stalled(message: string): Step;
  /** Deployments still rolling out. */
  waiting(message: string): Step;
  /**
   * Whether the module, installed and rolled out, serves: undefined when it does, else the step to
   * show instead of `ready` (the Scaler reads the aggregator's verdict on KEDA's metrics APIService
   * and the operator's lookups of the name KEDA's metrics server dials).
   */
  serving?(input: ModuleInput, namespace: string): Step | undefined;
  /**
   * The objects `serving` judged from besides the Deployments, read from the API server with them
   * before a status saying the module serves is written (the cache may be behind them: a watch
   * stalled unnoticed).
   */
  servedBy?(namespace: string): ObjectRef[];
  /** Everything installed and ready. */
  ready(config: Config, namespace: string): Step;
}

/** The status the module object shows now (`{}` when it has none or it is not an object). */
export function shownStatus(object: unknown): Record<string, unknown> {
  const status = (object as { status?: unknown } | null)?.status;
  return typeof status === "object" && status !== null && !Array.isArray(status)
    ? status as Record<string, unknown>
    : {};
}

/** The ModuleDecision of a step, on top of `base`. */
function stepDecision(
  states: readonly StateRow[],
  step: Step,
  base: Omit<ModuleDecision, "row" | "message">,
): ModuleDecision {
  return {
    ...base,
    ...(step.also ? { also: step.also } : {}),
    row: rowFor(states, step.reason, step.state),
    message: step.message,
  };
}

function install<Spec, Config>(
  m: ModuleLifecycle<Spec, Config>,
  input: ModuleInput,
  meta: ModuleMeta,
  spec: Spec,
  served: Omit<ModuleDecision, "row" | "message">,
): ModuleDecision {
  const namespace = meta.namespace ?? DEFAULT_MODULE_NAMESPACE;
  const config = m.configure(spec);
  if (!config.ok) {
    return {
      ...served,
      row: rowFor(m.states, m.invalid),
      message: fitMessage("Invalid configuration: ", errorLines(config.errors)),
    };
  }
  const target = { namespace, owner: ownerLabelValue(meta) };
  const diff = diffInstalled(
    m.render(config.value, target, input.images, input.crds),
    input.installed,
  );
  const ok = { ...served, ...m.configured?.(config.value) };
  const writes = { apply: diff.apply, delete: diff.prune };
  const failure = pendingFailure(input.lastOutcome, meta.generation, diff);
  if (failure) {
    return {
      ...ok,
      ...writes,
      row: rowFor(m.states, m.failed(failure.failed)),
      message: failure.message,
      requeueAfterMs: REQUEUE_MS.failure,
    };
  }
  if (!isInSync(diff)) {
    const step = m.applying(diff, config.value, input.object);
    return stepDecision(m.states, step, {
      ...ok,
      ...writes,
      requeueAfterMs: REQUEUE_MS.verifying,
    });
  }
  const readiness = moduleReadiness(m.deployments, namespace, input.installed);
  const settled = { ...ok, drop: ["Deleted", "DeploymentFailure"] };
  switch (readiness.kind) {
    case "replicaFailure":
      return {
        ...ok,
        row: rowFor(m.states, "DeploymentReplicaFailure"),
        message: `Replica failure: ${readiness.message}`,
        requeueAfterMs: REQUEUE_MS.failure,
      };
    case "stalled":
      return stepDecision(m.states, m.stalled(readiness.message), {
        ...settled,
        requeueAfterMs: REQUEUE_MS.failure,
      });
    case "waiting":
      return stepDecision(m.states, m.waiting(readiness.message), {
        ...settled,
        requeueAfterMs: REQUEUE_MS.verifying,
      });
    case "ready": {
      // Rolled out but not serving: looked at again, though a watch reports the change too.
      const notServing = m.serving?.(input, namespace);
      if (notServing) {
        return stepDecision(m.states, notServing, {
          ...settled,
          requeueAfterMs: notServing.requeueAfterMs ?? REQUEUE_MS.failure,
        });
      }
      // What the verdict rests on, read live before it is written (Plan's `confirm`).
      const confirm: ObjectRef[] = [
        ...m.deployments.map((name) => ({
          apiVersion: "apps/v1",
          kind: "Deployment",
          namespace,
          name,
        })),
        ...m.servedBy?.(namespace) ?? [],
      ];
      return stepDecision(m.states, m.ready(config.value, namespace), { ...settled, confirm });
    }
  }
}

/** Reconciles one module object of kind `m`. Pure and total: any input gives a Plan, never an exception. */
export function reconcileModule<Spec, Config>(
  m: ModuleLifecycle<Spec, Config>,
  input: ModuleInput,
): Plan {
  const raw = input.object;
  const plan = (d: ModuleDecision, generation: number | undefined) =>
    decisionPlan(raw, d, input.now, generation, m.keptFields);
  const obj = classifyModuleObject(m.kind, raw, input.peers, input.claim);
  if (obj.kind === "malformed") {
    const row = rowFor(m.states, m.invalid);
    return plan({ row, message: obj.message, served: false }, undefined);
  }
  const generation = obj.meta.generation;
  if (obj.kind === "claiming") return claimingPlan(obj);
  if (obj.kind === "duplicate") {
    const row = rowFor(m.states, m.duplicate);
    return plan(duplicateDecision(row, obj.message, obj.meta, m.finalizer), generation);
  }
  const decision = finalized<ModuleDecision>(obj.meta, m.finalizer, {
    apply: (finalizer) => inUse(m, input, obj.meta, obj.claimed, finalizer),
    cleanup: () => {
      const fields = m.statusFields?.(input.installed, undefined, shownStatus(input.object));
      const phase = deletionPhase(input.installed, input.userObjects);
      const words = { ...m.deletion, ...(fields ? { fields } : {}) };
      return {
        decision: deletionDecision(m.states, phase, words),
        done: phase.phase === "deleted",
      };
    },
  });
  return plan(decision, generation);
}

/** The decision for a served module object in use: invalid, claiming, or installing. */
function inUse<Spec, Config>(
  m: ModuleLifecycle<Spec, Config>,
  input: ModuleInput,
  meta: ModuleMeta,
  claimed: boolean,
  finalizer: FinalizerChange,
): ModuleDecision {
  const namespace = meta.namespace ?? DEFAULT_MODULE_NAMESPACE;
  const fields = m.statusFields?.(input.installed, namespace, shownStatus(input.object));
  const served = { served: true, drop: ["Deleted"], ...(fields ? { fields } : {}) };
  const parsed = m.parse(input.object);
  // An invalid object installs nothing, so it takes no finalizer: there is nothing to clean up.
  if (!parsed.ok) {
    return {
      ...served,
      row: rowFor(m.states, m.invalid),
      message: fitMessage(`The ${m.kind} object is invalid: `, errorLines(parsed.errors)),
    };
  }
  if (!claimed) {
    const { drop: _, ...claiming } = served;
    return stepDecision(m.states, m.claimed, {
      ...claiming,
      keepOnly: [],
      finalizer,
      requeueAfterMs: REQUEUE_MS.claim,
    });
  }
  return install(m, input, meta, parsed.value.spec, { ...served, finalizer });
}
