/**
 * Every controller of the operator, by name: the one list that the operator (`run --controllers`),
 * the simulator and the benchmarks take their controllers from.
 */
import type { ControllerSpec } from "../runtime/mod.ts";
import { rateLimitControllerFor, type RateLimitSettings } from "./ratelimit.ts";
import { ISTIO_ROOT_NAMESPACE } from "../api/mesh.ts";
import { scalerControllerFor } from "./scaler.ts";
import { serverlessController } from "./serverless.ts";

/** Names of the controllers, in the order the operator starts them. */
export const CONTROLLER_NAMES = ["serverless", "scaler", "ratelimit"] as const;
/** A controller name. */
export type ControllerName = typeof CONTROLLER_NAMES[number];

/** What the controllers need to know of the cluster they run in (the operator's flags). */
export interface ControllerSettings extends RateLimitSettings {
  /**
   * True when the operator serves its cluster DNS lookups (src/controllers/cluster_dns.ts) as
   * DNSLookup objects: the Scaler then reads them. The lookups themselves run only where the
   * operator can ask cluster DNS.
   */
  clusterDns?: boolean;
}

/** The settings of a cluster with Istio's defaults. */
export const DEFAULT_SETTINGS: ControllerSettings = { meshRootNamespace: ISTIO_ROOT_NAMESPACE };

/** Every controller of the operator, by name, for a cluster with `settings`. */
export function controllersFor(
  settings: ControllerSettings,
): Readonly<Record<ControllerName, ControllerSpec>> {
  return {
    serverless: serverlessController,
    scaler: scalerControllerFor(settings.clusterDns ?? false),
    ratelimit: rateLimitControllerFor(settings),
  };
}

/** Every controller of the operator, by name, with Istio's defaults. */
export const CONTROLLERS: Readonly<Record<ControllerName, ControllerSpec>> = controllersFor(
  DEFAULT_SETTINGS,
);

/** Every controller, in CONTROLLER_NAMES order, for a cluster with `settings`. */
export function allControllersFor(settings: ControllerSettings): readonly ControllerSpec[] {
  const byName = controllersFor(settings);
  return CONTROLLER_NAMES.map((n) => byName[n]);
}

/** Every controller, in CONTROLLER_NAMES order, with Istio's defaults. */
export const ALL_CONTROLLERS: readonly ControllerSpec[] = allControllersFor(DEFAULT_SETTINGS);
