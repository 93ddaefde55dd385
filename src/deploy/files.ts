/**
 * The generated files of `deploy/`: the RBAC from src/kube/rbac.ts (the operator's own in
 * deploy/base, each controller's in its component), the variants, the optional components. The
 * CRDs are not copied: `deploy/base/kustomization.yaml` takes `crds/` (with its own
 * kustomization) as a base.
 */
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { isObject } from "../api/json.ts";
import { MONITORING_CRDS, monitoringObjects } from "./monitoring_objects.ts";
import { fenceObjects } from "./fence_objects.ts";
import { adviceObjects } from "./advice_objects.ts";
import {
  controllerRbacObjects,
  DEFAULT_RBAC_NAMES,
  operatorRbacObjects,
  partRoleName,
  type RbacNames,
} from "../kube/rbac.ts";
import { CONTROLLER_NAMES } from "../controllers/registry.ts";
import { controllersArg, notServedObjects, type Variant, VARIANTS } from "./variants.ts";
import {
  DEFAULT_REDIS_SECRET,
  engineDeploymentPatch,
  globalEngineObjects,
} from "./global_engine_objects.ts";
import {
  DEFAULT_ISTIOD_SERVICE,
  istiodDiscoveryRbac,
  istiodServicePatch,
} from "./istiod_objects.ts";

/** One generated file: its path under deploy/ and its text. */
export interface DeployFile {
  path: string;
  text: string;
}

/**
 * deploy/base/rbac.yaml: the operator's own RBAC objects, whatever it serves, as one
 * multi-document YAML file. (Here, not in rbac.ts, which the operator loads: it never renders
 * YAML.)
 */
export function rbacYaml(names: RbacNames = DEFAULT_RBAC_NAMES): string {
  return yamlDocs(operatorRbacObjects(names), "src/kube/rbac.ts");
}

/** A kustomize Component of `resources`, headed by `comment` lines. */
function componentFile(path: string, resources: string[], comment: string[]): DeployFile {
  const component = {
    apiVersion: "kustomize.config.k8s.io/v1alpha1",
    kind: "Component",
    resources,
  };
  return {
    path,
    text: yamlDocs([component], "src/deploy/files.ts").replace(
      "Do not edit.\n",
      `Do not edit.\n${comment.map((l) => `# ${l}\n`).join("")}`,
    ),
  };
}

/**
 * deploy/<controller>/: a kustomize Component per controller with that controller's roles and
 * nothing else; deploy/ lists all three, a variant those it serves.
 */
function controllerFiles(): DeployFile[] {
  return CONTROLLER_NAMES.flatMap((c) => [
    componentFile(
      `${c}/kustomization.yaml`,
      ["rbac.yaml", ...(c === "ratelimit" ? ["advice.yaml"] : [])],
      [
        `The roles of the ${c} controller (ClusterRole ${partRoleName(c)}${
          c === "ratelimit" ? "" : ` and the grants of its module's RBAC`
        }), bound to the operator's ServiceAccount${
          c === "ratelimit"
            ? "; and advice.yaml, the API server's warnings on RateLimit rules (the preview's advice)"
            : ""
        }.`,
        "deploy/ has it; a variant without it runs without the controller (deploy/variants/).",
      ],
    ),
    { path: `${c}/rbac.yaml`, text: yamlDocs(controllerRbacObjects(c), "src/kube/rbac.ts") },
    ...(c === "ratelimit"
      ? [{
        path: `${c}/advice.yaml`,
        text: yamlDocs(adviceObjects(), "src/deploy/advice_objects.ts"),
      }]
      : []),
  ]);
}

/** A deploy folder the generator cannot use: what is wrong, said plainly. */
export class DeployFolderError extends Error {}

/** The images deploy/kustomization.yaml sets, which a variant sets the same. */
async function deployImages(deployDir: string): Promise<unknown> {
  const path = join(deployDir, "kustomization.yaml");
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
    throw new DeployFolderError(`${path}: no such file; is ${deployDir} a deploy folder?`);
  }
  let k: unknown;
  try {
    k = parse(text);
  } catch (err) {
    throw new DeployFolderError(`${path}: ${(err as Error).message.split("\n")[0]}`);
  }
  const images = isObject(k) ? k.images : undefined;
  if (!Array.isArray(images) || images.length === 0 || !images.every(isObject)) {
    throw new DeployFolderError(`${path} sets no images (a list of name and newName or newTag)`);
  }
  return images;
}

/**
 * deploy/variants/<name>/: deploy/base with the components of the controllers the variant serves,
 * the operator's `--controllers` set to them, and the not-served policies of the others.
 */
function variantFiles(v: Variant, images: unknown): DeployFile[] {
  const dir = `variants/${v.name}`;
  const arg = controllersArg(v.controllers);
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    resources: ["../../base", "not-served.yaml"],
    components: v.controllers.map((c) => `../../${c}`),
    ...(arg
      ? {
        patches: [{
          target: { kind: "Deployment", name: "platform-operator" },
          patch: stringify([{
            op: "add",
            path: "/spec/template/spec/containers/0/args/-",
            value: arg,
          }]),
        }],
      }
      : {}),
    images,
  };
  return [
    {
      path: `${dir}/kustomization.yaml`,
      text: yamlDocs([kustomization], "src/deploy/files.ts and src/deploy/variants.ts").replace(
        "Do not edit.\n",
        `Do not edit.\n# ${v.about}\n# Install: kubectl apply -k deploy/variants/${v.name}/ ` +
          `(the image as in deploy/kustomization.yaml; set yours in an overlay).\n`,
      ),
    },
    {
      path: `${dir}/not-served.yaml`,
      text: yamlDocs(notServedObjects(v.controllers), "src/deploy/variants.ts"),
    },
  ];
}

/** deploy/variants/: every variant's files, its image read from `deployDir`'s kustomization. */
export async function variantsFiles(deployDir: string): Promise<DeployFile[]> {
  const images = await deployImages(deployDir);
  return VARIANTS.flatMap((v) => variantFiles(v, images));
}

/** Objects as one multi-document YAML file, headed by where they come from. */
export function yamlDocs(objects: readonly unknown[], source: string): string {
  const docs = objects.map((o) => stringify(o, { lineWidth: 0, aliasDuplicateObjects: false }));
  return `# Generated by \`deno task deploy\` from ${source}. Do not edit.\n${docs.join("---\n")}`;
}

const MONITORING_SOURCE = "src/deploy/monitoring_objects.ts";

/**
 * deploy/monitoring/: a kustomize Component with the ServiceMonitor, the PrometheusRule and the
 * dashboard's ConfigMap, added to an install by listing it under `components:`.
 */
function monitoringFiles(): DeployFile[] {
  const [serviceMonitor, rule, dashboard, engineMonitor] = monitoringObjects();
  const files: DeployFile[] = [
    { path: "monitoring/servicemonitor.yaml", text: yamlDocs([serviceMonitor], MONITORING_SOURCE) },
    { path: "monitoring/prometheusrule.yaml", text: yamlDocs([rule], MONITORING_SOURCE) },
    { path: "monitoring/dashboard.yaml", text: yamlDocs([dashboard], MONITORING_SOURCE) },
    {
      path: "monitoring/engine-servicemonitor.yaml",
      text: yamlDocs([engineMonitor], MONITORING_SOURCE),
    },
  ];
  const component = {
    apiVersion: "kustomize.config.k8s.io/v1alpha1",
    kind: "Component",
    resources: files.map((f) => f.path.replace("monitoring/", "")),
  };
  return [{
    path: "monitoring/kustomization.yaml",
    text: `${yamlDocs([component], "src/deploy/files.ts")}`.replace(
      "Do not edit.\n",
      `Do not edit.\n# Needs prometheus-operator's CRDs (${MONITORING_CRDS.join(", ")}).\n` +
        "# Use it from your kustomization: resources: [<path>/deploy], components: [<path>/deploy/monitoring]\n",
    ),
  }, ...files];
}

const ISTIOD_SOURCE = "src/deploy/istiod_objects.ts";

/**
 * deploy/istiod/: a kustomize Component that makes the operator find istiod's replicas from the
 * EndpointSlices of Service istio-system/istiod, with the Role in istio-system that allows it.
 */
function istiodFiles(): DeployFile[] {
  const ns = DEFAULT_ISTIOD_SERVICE.namespace;
  const component = {
    apiVersion: "kustomize.config.k8s.io/v1alpha1",
    kind: "Component",
    resources: ["rbac.yaml"],
    patches: [{ path: "deployment.yaml" }],
  };
  return [
    {
      path: "istiod/kustomization.yaml",
      text: yamlDocs([component], "src/deploy/files.ts").replace(
        "Do not edit.\n",
        `Do not edit.\n# Needs namespace ${ns} (Istio installed): its Role lets the operator list and watch EndpointSlices there.\n` +
          "# Use it from your kustomization: resources: [<path>/deploy], components: [<path>/deploy/istiod]\n",
      ),
    },
    { path: "istiod/rbac.yaml", text: yamlDocs(istiodDiscoveryRbac(ns), ISTIOD_SOURCE) },
    { path: "istiod/deployment.yaml", text: yamlDocs([istiodServicePatch()], ISTIOD_SOURCE) },
  ];
}

const ENGINE_SOURCE = "src/deploy/global_engine_objects.ts";

/**
 * deploy/global-engine/: a kustomize Component that makes the operator deploy and keep the global
 * rate limit engine in platform-ratelimit, counting in the Redis its Secret there names.
 */
function globalEngineFiles(): DeployFile[] {
  const component = {
    apiVersion: "kustomize.config.k8s.io/v1alpha1",
    kind: "Component",
    resources: ["namespace.yaml", "rbac.yaml", "xds.yaml"],
    patches: [{ path: "deployment.yaml" }],
  };
  const [namespace, role, binding, service, policy] = globalEngineObjects();
  return [
    {
      path: "global-engine/kustomization.yaml",
      text: yamlDocs([component], "src/deploy/files.ts").replace(
        "Do not edit.\n",
        `Do not edit.\n# The operator deploys the global rate limit engine in namespace ${namespace.metadata.name} and keeps it, counting in the Redis\n` +
          `# that Secret ${DEFAULT_REDIS_SECRET} names (its keys: docs/operations.md, "The global rate limit engine").\n` +
          "# Use it from your kustomization: resources: [<path>/deploy], components: [<path>/deploy/global-engine]\n",
      ),
    },
    { path: "global-engine/namespace.yaml", text: yamlDocs([namespace], ENGINE_SOURCE) },
    { path: "global-engine/rbac.yaml", text: yamlDocs([role, binding], ENGINE_SOURCE) },
    { path: "global-engine/xds.yaml", text: yamlDocs([service, policy], ENGINE_SOURCE) },
    {
      path: "global-engine/deployment.yaml",
      text: yamlDocs([engineDeploymentPatch()], ENGINE_SOURCE),
    },
  ];
}

/** Every generated file of deploy/ but the variants (variantsFiles), sorted by path. */
export function deployFiles(): DeployFile[] {
  return [
    { path: "base/rbac.yaml", text: rbacYaml() },
    { path: "base/fence.yaml", text: yamlDocs(fenceObjects(), "src/deploy/fence_objects.ts") },
    ...globalEngineFiles(),
    ...istiodFiles(),
    ...monitoringFiles(),
    ...controllerFiles(),
  ];
}
