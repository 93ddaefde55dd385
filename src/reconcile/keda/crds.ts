/**
 * KEDA's CRDs as KEDA's release installs them (`keda.sh` and `eventing.keda.sh`, v1alpha1): full
 * schemas, printer columns and short names, generated from KEDA's Go API types by
 * `deno task module-crds` (./crds/). So the API server refuses what KEDA's own CRDs refuse and
 * `kubectl explain` shows KEDA's field docs; users' existing objects keep working.
 */
import type { KubeObject, ResourceType } from "../../api/object.ts";
import { type EmbeddedCrds, embeddedCrds, typeOfCrd, withMetadata } from "../upstream_crds.ts";
import { kedaMeta, type KedaTarget } from "./names.ts";

/** KEDA's CRDs, imported when the Scaler controller first reconciles (its preload). */
export const KEDA_CRDS: EmbeddedCrds = embeddedCrds(
  "KEDA's CRDs",
  () => import("./crds/generated.ts"),
);

/** The kinds KEDA's CRDs define: users' objects of these kinds keep the Scaler from being deleted. */
export function kedaKinds(): ResourceType[] {
  return KEDA_CRDS.get().map(typeOfCrd);
}

/** KEDA's CRDs with the Scaler's labels. */
export function kedaCrds(target: KedaTarget): KubeObject[] {
  return KEDA_CRDS.get().map((crd) =>
    withMetadata(crd, kedaMeta(target, crd.metadata.name, false))
  );
}
