/**
 * The global rate limit engine's controller (issue #43 point 2): its primary is the platform
 * team's Redis Secret (`--global-redis-secret`), watched in the engine's namespace only, and it
 * keeps the engine's objects there (src/reconcile/engine/), watched by the engine's labels in that
 * namespace only: a change to any of them, or their removal by someone, wakes the Secret's key, so
 * the engine is put back as the Secret says. Other Secrets of the namespace are cached (a watch
 * cannot be limited to one name here) but never reconciled.
 */
import { RESOURCES } from "../api/resources.ts";
import { splitKey } from "../api/object.ts";
import type { ControllerSpec } from "../runtime/mod.ts";
import { GLOBAL_ENGINE_LABELS, GLOBAL_ENGINE_SERVICE } from "../api/global_engine.ts";
import { type EngineSettings, reconcileEngine } from "../reconcile/engine/mod.ts";
import { whenLabelled } from "./triggers.ts";

/** The types of the engine's objects, as the reducer writes them. */
export const ENGINE_TYPES = [
  RESOURCES.ServiceAccount,
  RESOURCES.Deployment,
  RESOURCES.Service,
  RESOURCES.PodDisruptionBudget,
  RESOURCES.NetworkPolicy,
] as const;

/** The label selector of the engine's objects. */
export const ENGINE_SELECTOR = Object.entries(GLOBAL_ENGINE_LABELS).map(([k, v]) => `${k}=${v}`)
  .sort().join(",");

/** What the engine's controller is given: the engine's settings but the operator's namespace. */
export type EngineControllerSettings = Omit<EngineSettings, "operatorNamespace">;

/** The engine's controller for `settings` (ControllerSpec for the runtime). */
export function engineControllerFor(settings: EngineControllerSettings): ControllerSpec {
  const namespace = GLOBAL_ENGINE_SERVICE.namespace;
  const secretKey = `${settings.secret.namespace}/${settings.secret.name}`;
  const tls = settings.xdsTls?.secret;
  // The xDS TLS Secret (a Secret of the same namespace) is read by the Redis Secret's reconcile.
  const tlsKey = tls ? `${tls.namespace}/${tls.name}` : undefined;
  return {
    name: "engine",
    primary: RESOURCES.Secret,
    primaryNamespace: settings.secret.namespace,
    watches: ENGINE_TYPES.map((type) => ({
      type,
      labelSelector: ENGINE_SELECTOR,
      namespace,
      trigger: whenLabelled(GLOBAL_ENGINE_LABELS, () => [secretKey]),
    })),
    peers: (obj) =>
      tlsKey !== undefined && `${obj.metadata.namespace}/${obj.metadata.name}` === tlsKey
        ? [secretKey]
        : [],
    // Without the Secret there is nothing to do (the engine is kept as it is).
    watchesNeedPrimary: true,
    concurrency: 1,
    reconcile(key, cache, ctx) {
      if (key !== secretKey) return undefined;
      const { namespace: ns, name } = splitKey(key);
      const secret = cache.get(RESOURCES.Secret, ns, name);
      if (!secret) return undefined;
      return reconcileEngine({
        settings: { ...settings, operatorNamespace: ctx.namespace },
        secret,
        observed: ENGINE_TYPES.flatMap((t) => cache.list(t, namespace)),
        ...(tls ? { xdsTlsSecret: cache.get(RESOURCES.Secret, tls.namespace, tls.name) } : {}),
      });
    },
  };
}
