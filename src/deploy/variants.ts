/**
 * What an installation serves: the controllers it runs, the flag that runs them, and for each
 * controller it does not run an admission policy saying so. An operator without the Scaler
 * controller has no grant on Scalers (not even to watch them, let alone write their status or an
 * Event about them), so the API server itself answers a new Scaler: a ValidatingAdmissionPolicy
 * (CEL, no webhook, nothing of the operator's) refuses it with a message naming this installation.
 */
import type { KubeObject } from "../api/object.ts";
import { CONTROLLER_NAMES, type ControllerName, CONTROLLERS } from "../controllers/registry.ts";
import { admissionPolicy, matchingType } from "./admission_policy.ts";

/** An installation of deploy/ serving some controllers: deploy/variants/<name>. */
export interface Variant {
  name: string;
  controllers: readonly ControllerName[];
  /** What it is for, in its kustomization's header. */
  about: string;
}

/** The variants deploy/variants/ holds (deploy/ itself serves every controller). */
export const VARIANTS: readonly Variant[] = [{
  name: "ratelimit-only",
  controllers: ["ratelimit"],
  about:
    "The RateLimit controller alone: its roles only (no Secrets, no wildcard, no module grants), " +
    "and Scalers and Serverlesses refused as not served.",
}];

/** The operator's argument that runs `controllers`; none when they are all (its default). */
export function controllersArg(controllers: readonly ControllerName[]): string | undefined {
  if (CONTROLLER_NAMES.every((c) => controllers.includes(c))) return undefined;
  return `--controllers=${CONTROLLER_NAMES.filter((c) => controllers.includes(c)).join(",")}`;
}

/** The name of the admission policy (and its binding) refusing the objects of `controller`. */
export function notServedName(controller: ControllerName): string {
  return `platform-operator-${controller}-not-served`;
}

/**
 * The ValidatingAdmissionPolicy refusing the creation of an object of `controller`'s primary type
 * in an installation that does not run that controller, and its binding (Deny). Updates and
 * deletes pass: an object left from an installation that served it can still lose its finalizer
 * and go.
 */
export function notServedPolicy(controller: ControllerName): KubeObject[] {
  const type = CONTROLLERS[controller].primary;
  const name = notServedName(controller);
  const message = `${type.kind} is not served by this installation of platform-operator: it runs ` +
    `without the ${controller} controller (--controllers), so no ${type.kind} would be ` +
    `reconciled. Install deploy/ (or set the Helm value modules.${controller}.enabled=true) to ` +
    `serve them.`;
  return admissionPolicy(name, {
    failurePolicy: "Fail",
    matchConstraints: matchingType(type, ["CREATE"]),
    validations: [{ expression: "false", message, reason: "Forbidden" }],
  }, { validationActions: ["Deny"] });
}

/** The not-served policies of an installation serving `served`: one per other controller. */
export function notServedObjects(served: readonly ControllerName[]): KubeObject[] {
  return CONTROLLER_NAMES.filter((c) => !served.includes(c)).flatMap((c) => notServedPolicy(c));
}
