/** The API server's defaulting of what the module reducers' tests send to the simulator's store. */
import type { KubeObject } from "../../src/api/object.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);
const each = (v: unknown, f: (o: Obj) => void) => Array.isArray(v) && v.filter(isObj).forEach(f);

/**
 * Some of what a real API server does to an object it stores and the simulator does not: defaults
 * (ports' protocol, a Service's type, imagePullPolicy, a CRD's conversion, a webhook's matchPolicy,
 * fieldRef's apiVersion), canonical quantities, empty env values dropped. The test helper applies it
 * to what it sends (plans_on_sim_store.ts). Rendered objects must survive it unchanged as far as
 * they go, or the next reconcile would apply them again.
 */
export function apiServerDefaults(
  obj: KubeObject,
  canonical: (q: string) => string | undefined,
): KubeObject {
  const o = structuredClone(obj) as Obj & KubeObject;
  const spec = isObj(o.spec) ? o.spec : undefined;
  if (o.kind === "Deployment" && spec) {
    spec.strategy ??= {
      type: "RollingUpdate",
      rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" },
    };
    spec.progressDeadlineSeconds ??= 600;
    const pod = isObj(spec.template) && isObj(spec.template.spec) ? spec.template.spec : {};
    pod.restartPolicy ??= "Always";
    each(pod.containers, (c) => {
      c.imagePullPolicy ??= "IfNotPresent";
      c.terminationMessagePath ??= "/dev/termination-log";
      each(c.ports, (p) => (p.protocol ??= "TCP"));
      for (const list of ["limits", "requests"]) {
        const l = isObj(c.resources) ? c.resources[list] : undefined;
        if (isObj(l)) { for (const k of Object.keys(l)) l[k] = canonical(String(l[k])) ?? l[k]; }
      }
      each(c.env, (e) => {
        if (e.value === "") delete e.value;
        const from = isObj(e.valueFrom) ? e.valueFrom : {};
        if (isObj(from.fieldRef)) from.fieldRef.apiVersion ??= "v1";
        if (isObj(from.resourceFieldRef)) {
          from.resourceFieldRef.divisor = canonical(String(from.resourceFieldRef.divisor ?? "0")) ??
            "0";
        }
      });
    });
  }
  if (o.kind === "Service" && spec) {
    spec.type ??= "ClusterIP";
    spec.sessionAffinity ??= "None";
    each(spec.ports, (p) => {
      p.protocol ??= "TCP";
      p.targetPort ??= p.port;
    });
  }
  if (o.kind === "CustomResourceDefinition" && spec) spec.conversion ??= { strategy: "None" };
  if (o.kind === "ValidatingWebhookConfiguration") {
    each(o.webhooks, (w) => {
      w.matchPolicy ??= "Equivalent";
      w.timeoutSeconds ??= 10;
      w.namespaceSelector ??= {};
      w.objectSelector ??= {};
      each(w.rules, (r) => (r.scope ??= "*"));
    });
  }
  return o;
}
