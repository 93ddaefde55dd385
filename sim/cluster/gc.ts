/**
 * Background work of the control plane besides Deployments: the garbage collector (dependents of
 * an owner that is gone are deleted; orphaning strips the references instead), the CRD controller
 * (Established status; a deleted CRD first deletes its instances), and the namespace controller (a
 * deleted namespace first deletes its contents). All of it runs on the simulator's clock.
 */
import { copyForWrite } from "./json.ts";
import { RESOURCES } from "../../src/api/resources.ts";

import { ApiError } from "../../src/runtime/mod.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import type { SimClock } from "../clock.ts";
import type { Change } from "./history.ts";
import { type Actor, CRD_CLEANUP_FINALIZER, type Store } from "./store.ts";
import type { CrdSpec } from "./types.ts";
import { kubeTime } from "../../src/api/time.ts";

const GC: Actor = { name: "garbage-collector", manager: "kube-controller-manager" };
const CRD_CTRL: Actor = { name: "apiextensions-controller", manager: "kube-apiserver" };
const NS_CTRL: Actor = { name: "namespace-controller", manager: "kube-controller-manager" };

function tolerate(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    // Races with other writers are normal for background controllers; they retry on the next event.
    if (!(err instanceof ApiError) || ![404, 409].includes(err.code)) throw err;
  }
}

/** Garbage collection, CRD and namespace lifecycle. */
export class BackgroundControllers {
  /** owner uid → dependent uids. */
  #dependents = new Map<string, Set<string>>();
  #scheduled = false;

  constructor(readonly store: Store, readonly clock: SimClock, readonly delayMs: () => number) {
    store.subscribe((c) => this.#observe(c));
  }

  #observe(c: Change): void {
    const meta = c.object.metadata;
    const uid = meta.uid!;
    for (const ref of c.old?.metadata.ownerReferences ?? []) {
      this.#dependents.get(ref.uid)?.delete(uid);
    }
    if (c.type !== "DELETED") {
      for (const ref of meta.ownerReferences ?? []) {
        let set = this.#dependents.get(ref.uid);
        if (!set) this.#dependents.set(ref.uid, set = new Set());
        set.add(uid);
      }
      if (c.type === "ADDED" && meta.ownerReferences?.length) this.#later(() => this.#collect(uid));
    }
    if (c.rtype.kind === "CustomResourceDefinition" && c.type === "ADDED") {
      this.#later(() => this.#establish(meta.name));
    }
    if (c.type === "DELETED") {
      const deps = [...(this.#dependents.get(uid) ?? [])];
      this.#dependents.delete(uid);
      const orphan = this.store.orphaning.delete(uid);
      for (const dep of deps) {
        this.#later(() => orphan ? this.#orphan(dep, uid) : this.#collect(dep));
      }
    }
    if (meta.deletionTimestamp || c.type === "DELETED") this.#scheduleTerminations();
  }

  #later(fn: () => void): void {
    this.clock.schedule(this.delayMs(), () => tolerate(fn));
  }

  /** Deletes `uid` when none of its owners exists any more. */
  #collect(uid: string): void {
    const found = this.store.byUid(uid);
    if (!found || found.obj.metadata.deletionTimestamp) return;
    const refs = found.obj.metadata.ownerReferences ?? [];
    if (refs.length === 0 || refs.some((r) => this.store.byUid(r.uid))) return;
    const { namespace, name } = found.obj.metadata;
    this.store.delete(found.rtype, namespace, name, { preconditions: { uid } }, GC);
  }

  #orphan(uid: string, owner: string): void {
    const found = this.store.byUid(uid);
    if (!found) return;
    const refs = (found.obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== owner);
    const next = copyForWrite(found.obj);
    if (refs.length) next.metadata.ownerReferences = refs;
    else delete next.metadata.ownerReferences;
    this.store.update(found.rtype, next, GC);
  }

  #establish(name: string): void {
    const crd = this.store.get(RESOURCES.CustomResourceDefinition, undefined, name);
    if (!crd) return;
    const t = kubeTime(this.clock.now());
    const spec = crd.spec as CrdSpec;
    const status = {
      acceptedNames: { kind: spec.names.kind, plural: spec.names.plural },
      storedVersions: spec.versions.filter((v) => v.storage).map((v) => v.name),
      conditions: [
        {
          type: "NamesAccepted",
          status: "True",
          reason: "NoConflicts",
          message: "no conflicts found",
          lastTransitionTime: t,
        },
        {
          type: "Established",
          status: "True",
          reason: "InitialNamesAccepted",
          message: "the initial names have been accepted",
          lastTransitionTime: t,
        },
      ],
    };
    this.store.update(RESOURCES.CustomResourceDefinition, { ...crd, status }, CRD_CTRL, "status");
  }

  /** Coalesces termination work (CRDs, namespaces) into one pass a little later. */
  #scheduleTerminations(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#later(() => {
      this.#scheduled = false;
      this.#terminate();
    });
  }

  #terminate(): void {
    for (const crd of this.store.objects(RESOURCES.CustomResourceDefinition)) {
      if (crd.metadata.deletionTimestamp) tolerate(() => this.#terminateCrd(crd));
    }
    for (const ns of this.store.objects(RESOURCES.Namespace)) {
      if (ns.metadata.deletionTimestamp) tolerate(() => this.#terminateNamespace(ns.metadata.name));
    }
  }

  #terminateCrd(crd: KubeObject): void {
    const spec = crd.spec as CrdSpec;
    const served = this.store.types.all().find((t) =>
      t.group === spec.group && t.plural === spec.names.plural
    );
    const instances = served ? this.store.objects(served) : [];
    for (const o of instances) {
      if (!o.metadata.deletionTimestamp) {
        tolerate(() =>
          this.store.delete(served!, o.metadata.namespace, o.metadata.name, {}, CRD_CTRL)
        );
      }
    }
    if (served && this.store.objects(served).length > 0) return;
    const next = copyForWrite(crd);
    next.metadata.finalizers = (crd.metadata.finalizers ?? []).filter((f) =>
      f !== CRD_CLEANUP_FINALIZER
    );
    this.store.update(RESOURCES.CustomResourceDefinition, next, CRD_CTRL);
  }

  #terminateNamespace(name: string): void {
    let left = 0;
    const namespaced: ResourceType[] = this.store.types.all().filter((t) => t.namespaced);
    for (const type of namespaced) {
      for (const o of this.store.objects(type, name)) {
        left++;
        if (!o.metadata.deletionTimestamp) {
          tolerate(() => this.store.delete(type, name, o.metadata.name, {}, NS_CTRL));
        }
      }
    }
    if (left === 0) this.store.finalizeNamespace(name, NS_CTRL);
  }
}
