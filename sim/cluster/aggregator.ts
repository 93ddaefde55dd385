/**
 * The API server's aggregator, reduced to what the operator observes of it: the `Available`
 * condition of each APIService that points at a Service, as kube-aggregator's
 * `AvailableConditionController` (pkg/controllers/status/remote) sets it, with its reasons and
 * messages: `ServiceNotFound` when the Service is gone, `ServicePortError` when it has no such port,
 * `MissingEndpoints` when no ready Pod backs it (the simulator has no EndpointSlices: the Service's
 * ready Pods stand for its endpoints), `FailedDiscoveryCheck` when the discovery request fails (a
 * fault: cluster DNS or kube-proxy down for that Service), else `Passed`. It reacts to changes of
 * APIServices, Services and Pods after a short delay, on the simulator's clock.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import { ApiError } from "../../src/runtime/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { kubeTime } from "../../src/api/time.ts";
import type { JsonObject } from "../../src/api/json.ts";
import type { SimClock } from "../clock.ts";
import { podReady } from "./pod_template.ts";
import type { Actor, Store } from "./store.ts";

/** What the world decides about the aggregator's checks (faults plug in here). */
export interface AggregatorBehaviour {
  /**
   * The error of a discovery request to the Service `namespace/name` at `url` now (it cannot be
   * reached), or undefined when it answers.
   */
  discoveryError(namespace: string, name: string, url: string): string | undefined;
  /** Milliseconds the aggregator takes to react to a change. */
  reactionMs(): number;
}

const AGGREGATOR: Actor = { name: "kube-apiserver", manager: "kube-apiserver" };

interface ServiceRef {
  name?: string;
  namespace?: string;
  port?: number;
}

interface ApiServiceSpec {
  group?: string;
  version?: string;
  service?: ServiceRef | null;
}

interface Verdict {
  status: "True" | "False";
  reason: string;
  message: string;
}

/** The Available condition of an APIService, as the aggregator's checks decide it. */
export function availability(
  store: Store,
  api: KubeObject,
  discoveryError: AggregatorBehaviour["discoveryError"],
): Verdict {
  const spec = (api.spec ?? {}) as ApiServiceSpec;
  const passed: Verdict = { status: "True", reason: "Passed", message: "all checks passed" };
  const ref = spec.service;
  if (!ref?.name || !ref.namespace) {
    return { status: "True", reason: "Local", message: "Local APIServices are always available" };
  }
  const port = ref.port ?? 443;
  const where = `service/${ref.name} in "${ref.namespace}"`;
  const svc = store.get(RESOURCES.Service, ref.namespace, ref.name);
  if (!svc) {
    return { status: "False", reason: "ServiceNotFound", message: `${where} is not present` };
  }
  const svcSpec = (svc.spec ?? {}) as {
    ports?: { name?: string; port?: number }[];
    selector?: Record<string, string>;
  };
  const servicePort = (svcSpec.ports ?? []).find((p) => p.port === port);
  if (!servicePort) {
    return {
      status: "False",
      reason: "ServicePortError",
      message: `${where} is not listening on port ${port}`,
    };
  }
  const selector = Object.entries(svcSpec.selector ?? {});
  const backed = selector.length > 0 &&
    store.objects(RESOURCES.Pod, ref.namespace).some((p) =>
      podReady(p) && selector.every(([k, v]) => p.metadata.labels?.[k] === v)
    );
  if (!backed) {
    return {
      status: "False",
      reason: "MissingEndpoints",
      message: `endpointslices for ${where} have no addresses with port name "${
        servicePort.name ?? ""
      }"`,
    };
  }
  const url = `https://${ref.name}.${ref.namespace}.svc:${port}/apis/${spec.group}/${spec.version}`;
  const error = discoveryError(ref.namespace, ref.name, url);
  if (error) {
    return {
      status: "False",
      reason: "FailedDiscoveryCheck",
      message: `failing or missing response from ${url}: ${error}`,
    };
  }
  return passed;
}

/** Keeps every APIService's Available condition current, on the simulator's clock. */
export class AggregatorController {
  #pending = false;

  constructor(
    readonly store: Store,
    readonly clock: SimClock,
    readonly behaviour: AggregatorBehaviour,
  ) {
    store.subscribe((c) => {
      const kind = c.rtype.kind;
      const watched = kind === "Service" || kind === "Pod" ||
        (kind === "APIService" && c.type !== "DELETED" && c.actor !== AGGREGATOR.name);
      if (watched && c.rtype.group === (kind === "APIService" ? "apiregistration.k8s.io" : "")) {
        this.resync();
      }
    });
  }

  /** Checks every APIService again after the reaction delay (also when a fault starts or ends). */
  resync(): void {
    if (this.#pending) return;
    if (!this.store.objects(RESOURCES.APIService).length) return;
    this.#pending = true;
    this.clock.schedule(this.behaviour.reactionMs(), () => {
      this.#pending = false;
      for (const api of this.store.objects(RESOURCES.APIService)) this.#check(api);
    });
  }

  #check(api: KubeObject): void {
    if (api.metadata.deletionTimestamp) return;
    const v = availability(this.store, api, this.behaviour.discoveryError);
    const old = ((api.status as { conditions?: JsonObject[] } | undefined)?.conditions ?? [])
      .find((c) => c.type === "Available");
    const same = old?.status === v.status && old.reason === v.reason && old.message === v.message;
    if (same) return;
    const at = old?.status === v.status && typeof old.lastTransitionTime === "string"
      ? old.lastTransitionTime
      : kubeTime(this.clock.now());
    const status = { conditions: [{ type: "Available", ...v, lastTransitionTime: at }] };
    try {
      this.store.update(RESOURCES.APIService, { ...api, status }, AGGREGATOR, "status");
    } catch (err) {
      // Deleted or changed meanwhile: the change that did it schedules another check.
      if (!(err instanceof ApiError) || ![404, 409].includes(err.code)) throw err;
    }
  }
}
