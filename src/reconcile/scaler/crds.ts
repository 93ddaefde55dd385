/**
 * KEDA's CRDs as KEDA's release installs them (`keda.sh` and `eventing.keda.sh`, v1alpha1): full
 * schemas, printer columns and short names, generated from KEDA's Go API types by
 * `deno task module-crds` (data/upstream/keda/). So the API server refuses what KEDA's own CRDs refuse and
 * `kubectl explain` shows KEDA's field docs; users' existing objects keep working.
 */
import type { KubeObject, ResourceType } from "../../api/object.ts";
import { typeOfCrd, type UpstreamCrd, withMetadata } from "../upstream_crds.ts";
import { kedaMeta, type KedaTarget } from "./names.ts";

/** The kinds KEDA's CRDs define: users' objects of these kinds keep the Scaler from being deleted. */
export function kedaKinds(crds: readonly UpstreamCrd[]): ResourceType[] {
  return crds.map(typeOfCrd);
}

/** KEDA's CRDs with the Scaler's labels. */
export function kedaCrds(crds: readonly UpstreamCrd[], target: KedaTarget): KubeObject[] {
  return crds.map((crd) => withMetadata(crd, kedaMeta(target, crd.metadata.name, false)));
}
