/**
 * The built-in Deployment controller, reduced to what the operator observes: a Deployment gets
 * Pods labelled from its template (owned by it; no ReplicaSet objects), Pods become ready after a
 * delay drawn from the PRNG, a template change rolls the Pods (new ones first, old ones removed
 * once the new ones are ready), and the status carries what the real controller writes:
 * observedGeneration, replica counts (omitted when zero), and the Available, Progressing and
 * ReplicaFailure conditions with the real reasons and messages.
 */
import { RESOURCES } from "../../src/api/resources.ts";

import { ApiError } from "../../src/runtime/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { SimClock, TimerHandle } from "../clock.ts";
import { cloneJson } from "./json.ts";
import { maxUnavailable, podReady, templateHash } from "./pod_template.ts";
import type { Actor, Store } from "./store.ts";
import { deepEqual, type JsonObject } from "../../src/api/json.ts";
import { kubeTime } from "../../src/api/time.ts";

/** What the world decides about a Deployment's Pods (faults plug in here). */
export interface DeploymentBehaviour {
  /** Milliseconds until a new Pod of `d` reports Ready. */
  readyDelayMs(d: KubeObject): number;
  /**
   * A creation error message while Pods of `d` cannot be created (ReplicaFailure), else undefined.
   * `creator` is the actor that created the Deployment.
   */
  createFailure(d: KubeObject, creator: string | undefined): string | undefined;
  /** Milliseconds the controller takes to react to a change. */
  reactionMs(): number;
}

const KCM: Actor = { name: "kube-controller-manager", manager: "kube-controller-manager" };
const DEFAULT_DEADLINE_S = 600;

interface Condition extends JsonObject {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastUpdateTime: string;
  lastTransitionTime: string;
}

/** Reconciles Deployments into Pods and status, on the simulator's clock. */
export class DeploymentController {
  #pending = new Set<string>();
  #progressAt = new Map<string, number>();
  #deadlineAt = new Map<string, number>();
  #podIps = 0;
  /** Pods created and not ready yet, by uid: when they become ready, and how. */
  readonly #starting = new Map<string, { due: number; timer: TimerHandle; ready: () => void }>();

  constructor(
    readonly store: Store,
    readonly clock: SimClock,
    readonly behaviour: DeploymentBehaviour,
  ) {
    store.subscribe((c) => {
      if (c.rtype.kind === "Deployment" && c.type !== "DELETED" && c.actor !== KCM.name) {
        this.enqueue(c.object);
      }
      if (c.rtype.kind === "Pod") {
        const owner = c.object.metadata.ownerReferences?.find((r) =>
          r.kind === "Deployment" && r.controller
        );
        if (owner) this.#enqueueKey(`${c.object.metadata.namespace}/${owner.name}`);
      }
    });
  }

  /** Schedules a reconcile of Deployment `d`. */
  enqueue(d: KubeObject): void {
    this.#enqueueKey(`${d.metadata.namespace}/${d.metadata.name}`);
  }

  /**
   * Pods not ready yet that would take longer than `withinMs` become ready `withinMs` from now (a
   * fault that slowed them ends).
   */
  hasten(withinMs: number): void {
    const now = this.clock.now();
    for (const s of this.#starting.values()) {
      if (s.due <= now + withinMs) continue;
      s.timer.cancel();
      s.due = now + withinMs;
      s.timer = this.clock.schedule(withinMs, s.ready);
    }
  }

  /** Reconciles every Deployment again (after a fault starts or ends). */
  resyncAll(): void {
    for (const d of this.store.objects(RESOURCES.Deployment)) this.enqueue(d);
  }

  #enqueueKey(key: string): void {
    if (this.#pending.has(key)) return;
    this.#pending.add(key);
    this.clock.schedule(this.behaviour.reactionMs(), () => {
      this.#pending.delete(key);
      const [ns, name] = key.split("/");
      try {
        this.#reconcile(ns, name);
      } catch (err) {
        // The world moved on between the event and the reconcile (object or namespace gone).
        if (!(err instanceof ApiError) || ![403, 404, 409].includes(err.code)) throw err;
      }
    });
  }

  #reconcile(namespace: string, name: string): void {
    const d = this.store.get(RESOURCES.Deployment, namespace, name);
    if (!d || d.metadata.deletionTimestamp) return;
    const uid = d.metadata.uid!;
    const spec = d.spec as {
      replicas?: number;
      template?: JsonObject;
      progressDeadlineSeconds?: number;
    };
    const desired = spec.replicas ?? 1;
    const hash = templateHash(spec.template);
    const owned = () =>
      this.store.objects(RESOURCES.Pod, namespace).filter((p) =>
        !p.metadata.deletionTimestamp && p.metadata.ownerReferences?.some((r) => r.uid === uid)
      );
    const isNew = (p: KubeObject) => p.metadata.labels?.["pod-template-hash"] === hash;
    const now = this.clock.now();
    if (!this.#progressAt.has(uid)) this.#progressAt.set(uid, now);

    const failure = this.behaviour.createFailure(d, this.store.creatorOf(uid));
    let current = owned().filter(isNew);
    if (!failure) {
      for (let i = current.length; i < desired; i++) this.#createPod(d, hash);
      if (current.length < desired) this.#progressAt.set(uid, now);
    }
    for (const extra of current.slice(desired)) {
      this.store.delete(RESOURCES.Pod, namespace, extra.metadata.name, {}, KCM);
    }
    current = owned().filter(isNew);
    if (current.filter(podReady).length >= desired) {
      for (const old of owned().filter((p) => !isNew(p))) {
        this.store.delete(RESOURCES.Pod, namespace, old.metadata.name, {}, KCM);
      }
    }

    const pods = owned();
    const ready = pods.filter(podReady).length;
    const updated = pods.filter(isNew).length;
    const complete = updated === desired && pods.length === desired && ready === desired;
    const deadlineMs = (spec.progressDeadlineSeconds ?? DEFAULT_DEADLINE_S) * 1000;
    const stuck = !complete && now - this.#progressAt.get(uid)! >= deadlineMs;
    const due = this.#progressAt.get(uid)! + deadlineMs;
    if (!complete && !stuck && this.#deadlineAt.get(uid) !== due) {
      this.#deadlineAt.set(uid, due);
      this.clock.schedule(due - now, () => this.enqueue(d));
    }
    this.#writeStatus(d, {
      desired,
      total: pods.length,
      updated,
      ready,
      complete,
      stuck,
      failure,
      rsName: `${name}-${hash}`,
    });
  }

  #createPod(d: KubeObject, hash: string): void {
    const template = ((d.spec as JsonObject).template ?? {}) as {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: unknown;
    };
    const { name, namespace, uid } = d.metadata;
    const pod: KubeObject = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "",
        generateName: `${name}-${hash}-`,
        namespace,
        labels: { ...(template.metadata?.labels ?? {}), "pod-template-hash": hash },
        ...(template.metadata?.annotations
          ? { annotations: { ...template.metadata.annotations } }
          : {}),
        ownerReferences: [{
          apiVersion: "apps/v1",
          kind: "Deployment",
          name,
          uid: uid!,
          controller: true,
          blockOwnerDeletion: true,
        }],
      },
      spec: cloneJson(template.spec ?? {}),
    };
    const created = this.store.create(RESOURCES.Pod, pod, KCM).obj;
    const podName = created.metadata.name;
    this.store.update(
      RESOURCES.Pod,
      {
        ...created,
        status: { phase: "Pending", conditions: [{ type: "Ready", status: "False" }] },
      },
      KCM,
      "status",
    );
    const ip = ++this.#podIps;
    const podUid = created.metadata.uid!;
    const ready = () => {
      this.#starting.delete(podUid);
      const p = this.store.get(RESOURCES.Pod, namespace, podName);
      if (!p || p.metadata.uid !== created.metadata.uid || p.metadata.deletionTimestamp) return;
      const t = kubeTime(this.clock.now());
      const status = {
        phase: "Running",
        podIP: `10.${(ip >> 16) & 255}.${(ip >> 8) & 255}.${ip & 255}`,
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: t }],
      };
      this.store.update(RESOURCES.Pod, { ...p, status }, KCM, "status");
      this.#progressAt.set(d.metadata.uid!, this.clock.now());
    };
    const delay = this.behaviour.readyDelayMs(d);
    const timer = this.clock.schedule(delay, ready);
    this.#starting.set(podUid, { due: this.clock.now() + delay, timer, ready });
  }

  #writeStatus(
    d: KubeObject,
    s: {
      desired: number;
      total: number;
      updated: number;
      ready: number;
      complete: boolean;
      stuck: boolean;
      failure?: string;
      rsName: string;
    },
  ): void {
    const old = (d.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
    const t = kubeTime(this.clock.now());
    const cond = (type: string, status: string, reason: string, message: string): Condition => {
      const prev = old.find((c) => c.type === type);
      const same = prev && prev.status === status && prev.reason === reason &&
        prev.message === message;
      return {
        type,
        status,
        lastUpdateTime: same ? prev.lastUpdateTime : t,
        lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : t,
        reason,
        message,
      };
    };
    const available = s.ready >= s.desired - maxUnavailable(d, s.desired);
    const conditions: Condition[] = [
      available
        ? cond(
          "Available",
          "True",
          "MinimumReplicasAvailable",
          "Deployment has minimum availability.",
        )
        : cond(
          "Available",
          "False",
          "MinimumReplicasUnavailable",
          "Deployment does not have minimum availability.",
        ),
      s.complete
        ? cond(
          "Progressing",
          "True",
          "NewReplicaSetAvailable",
          `ReplicaSet "${s.rsName}" has successfully progressed.`,
        )
        : s.stuck
        ? cond(
          "Progressing",
          "False",
          "ProgressDeadlineExceeded",
          `ReplicaSet "${s.rsName}" has timed out progressing.`,
        )
        : cond(
          "Progressing",
          "True",
          "ReplicaSetUpdated",
          `ReplicaSet "${s.rsName}" is progressing.`,
        ),
    ];
    if (s.failure) conditions.push(cond("ReplicaFailure", "True", "FailedCreate", s.failure));
    const unavailable = Math.max(0, s.desired - s.ready);
    const status: JsonObject = { observedGeneration: d.metadata.generation };
    if (s.total) status.replicas = s.total;
    if (s.updated) status.updatedReplicas = s.updated;
    if (s.ready) status.readyReplicas = s.ready;
    if (s.ready) status.availableReplicas = s.ready;
    if (unavailable) status.unavailableReplicas = unavailable;
    status.conditions = conditions;
    const fresh = this.store.get(RESOURCES.Deployment, d.metadata.namespace, d.metadata.name);
    if (fresh && !deepEqual(fresh.status, status)) {
      this.store.update(RESOURCES.Deployment, { ...fresh, status }, KCM, "status");
    }
  }
}
