/** Every object of the KEDA module, rendered for the served Scaler's configuration. */
import type { ScalerComponent } from "../../api/scaler.ts";
import type { KubeObject } from "../../api/object.ts";
import type { ModuleImages } from "../../api/images.ts";
import type { ComponentConfig } from "./config.ts";
import { kedaCrds } from "./crds.ts";
import type { UpstreamCrd } from "../upstream_crds.ts";
import type { KedaTarget } from "./names.ts";
import { kedaRbac } from "./rbac.ts";
import { kedaWorkloads } from "./workloads.ts";

/**
 * KEDA's objects: CRDs, ServiceAccounts and RBAC first, the Deployments after their Services, the
 * APIService and webhook configuration last, so that an in-order apply creates dependencies first.
 * `crds`: KEDA's CRDs as upstream makes them.
 */
export function renderKeda(
  target: KedaTarget,
  components: Record<ScalerComponent, ComponentConfig>,
  images: ModuleImages,
  crds: readonly UpstreamCrd[],
): KubeObject[] {
  return [
    ...kedaCrds(crds, target),
    ...kedaRbac(target),
    ...kedaWorkloads(target, components, images),
  ];
}
