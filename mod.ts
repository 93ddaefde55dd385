/**
 * The platform operator: Serverless, Scaler and RateLimit on Kubernetes.
 *
 * As a program this is the CLI (`deno run -A mod.ts --help` lists the commands); as a module it
 * exports the library: the API schemas and their parse functions, the CRDs, the `Cluster` port and
 * the `Plan` a reconcile returns.
 *
 * @module
 */
export * from "./src/api/common.ts";
export * from "./src/api/duration.ts";
export * from "./src/api/issues.ts";
export * from "./src/api/resources.ts";
export * from "./src/api/serverless.ts";
export * from "./src/api/scaler.ts";
export * from "./src/api/ratelimit.ts";
// The Cluster port and the controller specification, from the runtime's front door.
export {
  ApiError,
  type ApplyOptions,
  classifyError,
  type Cluster,
  type DeleteOptions,
  describeFailure,
  type ErrorClass,
  errorMessage,
  forwardingTo,
  isApiError,
  type ListOptions,
  type ListPage,
  NotLeaderError,
  TerminalError,
  type WatchEvent,
  type WatchOptions,
  type WriteOptions,
} from "./src/runtime/mod.ts";
export type {
  CacheChange,
  CacheReader,
  Clock,
  ControllerCache,
  ControllerSpec,
  IndexSpec,
  MapFunc,
  PlannedWatch,
  Random,
  ReconcileContext,
  RunnerCache,
  WatchSpec,
} from "./src/runtime/mod.ts";
export * from "./src/reconcile/plan.ts";
export * from "./src/crd/definitions.ts";
export { crdSchemaOf, type JsonSchema } from "./src/crd/schema.ts";
export { renderCrdFiles } from "./src/crd/render.ts";

import { main } from "./src/cli/main.ts";

if (import.meta.main) Deno.exit(await main(Deno.args));
