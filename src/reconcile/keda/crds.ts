/**
 * KEDA's CRDs as KEDA's release installs them (`keda.sh` and `eventing.keda.sh`, v1alpha1): full
 * schemas, printer columns and short names, generated from KEDA's Go API types by
 * `deno task module-crds` (./crds/). So the API server refuses what KEDA's own CRDs refuse and
 * `kubectl explain` shows KEDA's field docs; users' existing objects keep working.
 */
import type { KubeObject, ResourceType } from "../../api/object.ts";
import { embeddedCrds, typeOfCrd, withMetadata } from "../upstream_crds.ts";
import { CRDS_JSON } from "./crds/generated.ts";
import { kedaMeta, type KedaTarget } from "./names.ts";

const upstream = embeddedCrds(CRDS_JSON);

/** The kinds KEDA's CRDs define: users' objects of these kinds keep the Scaler from being deleted. */
export function kedaKinds(): ResourceType[] {
  return upstream().map(typeOfCrd);
}

/** KEDA's CRDs with the Scaler's labels. */
export function kedaCrds(target: KedaTarget): KubeObject[] {
  return upstream().map((crd) => withMetadata(crd, kedaMeta(target, crd.metadata.name, false)));
}
