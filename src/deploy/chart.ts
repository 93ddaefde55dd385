/**
 * The Helm chart, rendered from what deploy/ renders: the same objects (deploy/'s own manifests,
 * the RBAC of rbac.ts, the monitoring objects, the CRDs of crds/), with seven values put in their
 * place: the image, the replicas, the resources, the mesh's root namespace, whether the
 * monitoring objects are installed, and istiod's Service whose replicas the operator finds
 * (`istiodService`, empty by default: deploy/istiod's Role in its namespace and the variable),
 * and the global rate limit engine's Redis Secret and image (`globalEngine`, empty by default:
 * deploy/global-engine's objects, the variables and the xDS port). With
 * the default values (those deploy/ has) `helm template --include-crds` gives exactly `kubectl
 * kustomize deploy/`, with `istiodService=istio-system/istiod` exactly deploy/ with the
 * deploy/istiod component, and with `globalEngine.redisSecret=platform-ratelimit/redis` exactly
 * deploy/ with the deploy/global-engine component (tests/deploy/chart_test.ts).
 */
import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import type { KubeObject } from "../api/object.ts";
import { MONITORING_CRDS, monitoringObjects } from "./monitoring_objects.ts";
import { controllerRbacObjects, operatorRbacObjects } from "../kube/rbac.ts";
import { CONTROLLER_NAMES } from "../controllers/registry.ts";
import { notServedPolicy } from "./variants.ts";
import { fenceObjects } from "./fence_objects.ts";
import { adviceObjects } from "./advice_objects.ts";
import { ISTIOD_SERVICE_ENV, istiodDiscoveryRbac } from "./istiod_objects.ts";
import { MAX_CONCURRENCY } from "../runtime/mod.ts";
import {
  GLOBAL_ENGINE_IMAGE_ENV,
  GLOBAL_ENGINE_SIZE_ENV,
  GLOBAL_REDIS_SECRET_ENV,
  globalEngineObjects,
  XDS_PORT_NAME,
} from "./global_engine_objects.ts";
import { ENGINE_XDS, GLOBAL_ENGINE_SERVICE } from "../api/global_engine.ts";
import {
  DEFAULT_ENGINE_REPLICAS,
  DEFAULT_ENGINE_RESOURCES,
  MAX_ENGINE_REPLICAS,
} from "../reconcile/engine/mod.ts";
import { NON_NEGATIVE_QUANTITY_PATTERN } from "../api/schema/scaler.ts";
import { IMAGE_NAME_PATTERN, IMAGE_REFERENCE_PATTERN, IMAGE_TAG_PATTERN } from "../api/images.ts";
import { DNS_SUBDOMAIN } from "../api/names.ts";

/** Where the chart is written, under deploy/. */
export const CHART_DIR = "helm/platform-operator";

/** One file: its path under deploy/ and its text. */
export interface ChartFile {
  path: string;
  text: string;
}

interface Kustomization {
  resources: string[];
  images: { name: string; newName: string; newTag: string }[];
}

/** The operator's variable for `--concurrency` (run_flags.ts's envName; a test holds them equal). */
export const CONCURRENCY_ENV = "PLATFORM_OPERATOR_CONCURRENCY";

/** Escapes Go template delimiters in rendered text so Helm prints them as they are. */
function escapeTemplate(text: string): string {
  return text.replace(/\{\{|\}\}/g, (d) => `{{ "${d}" }}`);
}

/** The placeholders a rendering leaves, and the template text each becomes. */
const HOLES: Record<string, (indent: string) => string> = {
  replicas: () => "{{ .Values.replicas }}",
  // Quoted as every value is: a tag holding a quote or a line break stays one string.
  image: () => `{{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}`,
  meshRootNamespace: () => "{{ .Values.meshRootNamespace | quote }}",
  concurrency: () => "{{ .Values.concurrency | quote }}",
  resources: (indent) =>
    `\n${indent}  {{- toYaml .Values.resources | nindent ${indent.length + 2} }}`,
  // An item of the operator's env list, there only when istiodService is set.
  istiodService: (indent) =>
    `{{- if .Values.istiodService }}\n${indent}- name: ${ISTIOD_SERVICE_ENV}\n` +
    `${indent}  value: {{ .Values.istiodService | quote }}\n${indent}{{- end }}`,
  // The namespace part of istiodService.
  istiodNamespace: () => `{{ index (splitList "/" .Values.istiodService) 0 | quote }}`,
  // Items of the operator's env and ports, there only when globalEngine.redisSecret is set.
  globalEngineEnv: (indent) =>
    `{{- if .Values.globalEngine.redisSecret }}\n${indent}- name: ${GLOBAL_REDIS_SECRET_ENV}\n` +
    `${indent}  value: {{ .Values.globalEngine.redisSecret | quote }}\n` +
    `${indent}{{- if .Values.globalEngine.image }}\n${indent}- name: ${GLOBAL_ENGINE_IMAGE_ENV}\n` +
    `${indent}  value: {{ .Values.globalEngine.image | quote }}\n${indent}{{- end }}\n` +
    // The engine's size, as variables only where it differs from the operator's defaults (so
    // the defaults render exactly deploy/global-engine).
    `${indent}{{- if ne (int .Values.globalEngine.replicas) ${DEFAULT_ENGINE_REPLICAS} }}\n` +
    `${indent}- name: ${GLOBAL_ENGINE_SIZE_ENV.replicas}\n` +
    `${indent}  value: {{ .Values.globalEngine.replicas | quote }}\n${indent}{{- end }}\n` +
    ["requests", "limits"].map((part) =>
      `${indent}{{- $${part} := list }}{{- range $k, $v := .Values.globalEngine.resources.${part} }}` +
      `{{- $${part} = append $${part} (printf "%s=%v" $k $v) }}{{- end }}\n` +
      `${indent}{{- if ne (join "," $${part}) ${
        JSON.stringify(
          Object.entries(DEFAULT_ENGINE_RESOURCES[part as "requests" | "limits"]).sort()
            .map(([k, v]) => `${k}=${v}`).join(","),
        )
      } }}\n` +
      `${indent}- name: ${GLOBAL_ENGINE_SIZE_ENV[part as "requests" | "limits"]}\n` +
      `${indent}  value: {{ join "," $${part} | quote }}\n${indent}{{- end }}\n`
    ).join("") +
    `${indent}{{- end }}`,
  // The last item of the operator's args: --controllers when a module is off (variants.ts).
  controllers: (indent) =>
    `{{- $on := list }}{{- range $c := list ${
      CONTROLLER_NAMES.map((c) => `"${c}"`).join(" ")
    } }}{{- if (index $.Values.modules $c).enabled }}{{- $on = append $on $c }}{{- end }}{{- end }}\n` +
    `${indent}{{- if lt (len $on) ${CONTROLLER_NAMES.length} }}\n${indent}- --controllers={{ join "," $on }}\n` +
    `${indent}{{- end }}`,
  globalEnginePort: (indent) =>
    `{{- if .Values.globalEngine.redisSecret }}\n${indent}- name: ${XDS_PORT_NAME}\n` +
    `${indent}  containerPort: ${ENGINE_XDS.port}\n${indent}  protocol: TCP\n${indent}{{- end }}`,
};

/** Holes that are whole list items: the item's `- ` is the template's. */
const LIST_ITEMS = new Set(["istiodService", "globalEngineEnv", "globalEnginePort", "controllers"]);

/** Holes whose whole line is the template: the YAML before the hole on its line is dropped. */
const WHOLE_LINE = new Set(["resources", "istiodService"]);

/** YAML of `obj` with its placeholders (`"@@name@@"`) made template expressions. */
function template(obj: unknown): string {
  const text = escapeTemplate(stringify(obj, { lineWidth: 0, aliasDuplicateObjects: false }));
  return text.replace(
    /^( *)(.*)"@@(\w+)@@"$/gm,
    (_, indent: string, head: string, hole: string) =>
      LIST_ITEMS.has(hole)
        ? `${indent}${HOLES[hole](indent)}`
        : `${indent}${WHOLE_LINE.has(hole) ? head.trimEnd() : head}${HOLES[hole](indent)}`,
  );
}

type Container = {
  name: string;
  image: string;
  args?: string[];
  resources?: unknown;
  env?: { name: string; value?: string }[];
  ports?: unknown[];
};

/** The Deployment with its values' places marked; returns the defaults it had. */
function markDeployment(d: KubeObject, image: string): Record<string, unknown> {
  const spec = d.spec as { replicas: number; template: { spec: { containers: Container[] } } };
  const c = spec.template.spec.containers.find((c) => c.name === "operator");
  const mesh = c?.env?.find((e) => e.name === "PLATFORM_OPERATOR_MESH_ROOT_NAMESPACE");
  const concurrency = c?.env?.find((e) => e.name === CONCURRENCY_ENV);
  if (!c || !mesh?.value || !concurrency?.value || c.image !== "platform-operator") {
    throw new Error(
      `deploy/deployment.yaml: no operator container with image platform-operator, PLATFORM_OPERATOR_MESH_ROOT_NAMESPACE and ${CONCURRENCY_ENV}`,
    );
  }
  const [repository, tag] = image.split(/:(?=[^:]+$)/);
  const defaults = {
    replicas: spec.replicas,
    image: { repository, tag },
    resources: c.resources,
    meshRootNamespace: mesh.value,
    concurrency: Number(concurrency.value),
  };
  spec.replicas = "@@replicas@@" as unknown as number;
  c.image = "@@image@@";
  c.resources = "@@resources@@";
  mesh.value = "@@meshRootNamespace@@";
  concurrency.value = "@@concurrency@@";
  c.env?.unshift("@@istiodService@@" as unknown as { name: string });
  c.env?.unshift("@@globalEngineEnv@@" as unknown as { name: string });
  c.ports?.unshift("@@globalEnginePort@@");
  c.args?.push("@@controllers@@");
  return defaults;
}

async function readDocs(path: string): Promise<KubeObject[]> {
  return parseAllDocuments(await Deno.readTextFile(path)).map((d) => d.toJS() as KubeObject).filter(
    Boolean,
  );
}

/** deploy/base's generated files, by name, and the objects each holds (src/deploy/files.ts). */
const GENERATED_BASE: Record<string, () => KubeObject[]> = {
  "rbac.yaml": () => operatorRbacObjects(),
  "fence.yaml": () => fenceObjects(),
};

const HEAD =
  "# Generated by `deno task deploy` from deploy/ and src/deploy/chart.ts. Do not edit.\n";

/**
 * The chart's files, read from the deploy folder `deployDir` (its kustomization's image, its
 * base's resources; each controller's roles, there when its module is enabled).
 */
export async function chartFiles(deployDir: string, version: string): Promise<ChartFile[]> {
  const k = (await readDocs(join(deployDir, "kustomization.yaml")))[0] as unknown as Kustomization;
  const img = k.images.find((i) => i.name === "platform-operator");
  if (!img) throw new Error("deploy/kustomization.yaml: no image platform-operator");
  const baseDir = join(deployDir, "base");
  const base = (await readDocs(join(baseDir, "kustomization.yaml")))[0] as unknown as Kustomization;
  const files: ChartFile[] = [];
  const put = (path: string, text: string) => files.push({ path: `${CHART_DIR}/${path}`, text });
  let values: Record<string, unknown> | undefined;
  for (const entry of base.resources) {
    if (entry === "../../crds") continue;
    const name = entry.replace(/\.yaml$/, "");
    // rbac.yaml and fence.yaml are generated: render the objects, not a file that may be stale.
    const generated = GENERATED_BASE[entry];
    const docs = generated ? generated() : await readDocs(join(baseDir, entry));
    for (const d of docs) {
      if (d.kind === "Deployment") values = markDeployment(d, `${img.newName}:${img.newTag}`);
    }
    const text = docs.map(template).join("---\n");
    // One replica cannot keep one available through a voluntary eviction: with a budget, every
    // drain of its node would wait for ever. So the budget is there only with two or more.
    const budget = docs.length > 0 && docs.every((d) => d.kind === "PodDisruptionBudget");
    put(
      `templates/${name}.yaml`,
      budget ? `${HEAD}{{- if gt (int .Values.replicas) 1 }}\n${text}{{- end }}\n` : HEAD + text,
    );
  }
  if (!values) throw new Error("deploy/: no Deployment");
  const monitoring = monitoringObjects().map(template).join("---\n");
  put(
    "templates/monitoring.yaml",
    `${HEAD}{{- if .Values.monitoring.enabled }}\n` +
      `{{- if not (and (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor") (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/PrometheusRule")) }}\n` +
      `{{- fail "monitoring.enabled needs prometheus-operator's CRDs (${
        MONITORING_CRDS.join(", ")
      }): install prometheus-operator first, or set monitoring.enabled=false" }}\n` +
      `{{- end }}\n${monitoring}{{- end }}\n`,
  );
  const crdDir = join(deployDir, "..", "crds");
  const crdK = (await readDocs(join(crdDir, "kustomization.yaml")))[0] as unknown as Kustomization;
  for (const f of crdK.resources) put(`crds/${f}`, await Deno.readTextFile(join(crdDir, f)));
  put(
    "Chart.yaml",
    HEAD + stringify({
      apiVersion: "v2",
      name: "platform-operator",
      description:
        "Serverless and Scaler modules and RateLimit local rate limits for an Istio mesh",
      type: "application",
      version,
      appVersion: img.newTag,
    }),
  );
  // Each controller's roles (and the RateLimit's advice) when its module is enabled
  // (deploy/<controller>), else the policy refusing its objects as not served (deploy/variants/).
  for (const c of CONTROLLER_NAMES) {
    const served = [...controllerRbacObjects(c), ...(c === "ratelimit" ? adviceObjects() : [])];
    const roles = served.map(template).join("---\n");
    const refused = notServedPolicy(c).map(template).join("---\n");
    put(
      `templates/${c}.yaml`,
      `${HEAD}{{- if .Values.modules.${c}.enabled }}\n${roles}{{- else }}\n${refused}{{- end }}\n`,
    );
  }
  // deploy/istiod's Role, in the namespace of istiodService, when it is set.
  const discovery = istiodDiscoveryRbac("@@istiodNamespace@@").map(template).join("---\n");
  put(
    "templates/istiod.yaml",
    `${HEAD}{{- if .Values.istiodService }}\n${discovery}{{- end }}\n`,
  );
  // deploy/global-engine's objects, when globalEngine.redisSecret is set.
  const engine = globalEngineObjects().map(template).join("---\n");
  put(
    "templates/global-engine.yaml",
    `${HEAD}{{- if .Values.globalEngine.redisSecret }}\n${engine}{{- end }}\n`,
  );
  put(
    "values.yaml",
    HEAD + stringify({
      ...values,
      modules: Object.fromEntries(CONTROLLER_NAMES.map((c) => [c, { enabled: true }])),
      monitoring: { enabled: false },
      istiodService: "",
      globalEngine: {
        redisSecret: "",
        image: "",
        replicas: DEFAULT_ENGINE_REPLICAS,
        resources: DEFAULT_ENGINE_RESOURCES,
      },
    }),
  );
  put("values.schema.json", JSON.stringify(valuesSchema(), null, 2) + "\n");
  return files.sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** The most operator replicas the chart runs: one leads, the others stand by. */
const MAX_OPERATOR_REPLICAS = 10;

/** The values' JSON schema: Helm checks a values file against it and names the bad field. */
function valuesSchema(): unknown {
  // A quantity as the API server takes it in a container's resources: not negative.
  const quantity = {
    type: ["string", "number"],
    pattern: NON_NEGATIVE_QUANTITY_PATTERN,
    minimum: 0,
  };
  const unanchored = (pattern: string) => pattern.replace(/^\^/, "").replace(/\$$/, "");
  const list = {
    type: "object",
    additionalProperties: false,
    properties: { cpu: quantity, memory: quantity },
  };
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    additionalProperties: false,
    required: [
      "image",
      "replicas",
      "resources",
      "meshRootNamespace",
      "concurrency",
      "modules",
      "monitoring",
      "istiodService",
      "globalEngine",
    ],
    properties: {
      image: {
        type: "object",
        additionalProperties: false,
        required: ["repository", "tag"],
        properties: {
          repository: { type: "string", pattern: IMAGE_NAME_PATTERN, maxLength: 255 },
          tag: { type: "string", pattern: IMAGE_TAG_PATTERN },
        },
      },
      // One leads; more only stand by (and one has no disruption budget: see pdb.yaml).
      replicas: { type: "integer", minimum: 1, maximum: MAX_OPERATOR_REPLICAS },
      resources: {
        type: "object",
        additionalProperties: false,
        properties: { requests: list, limits: list },
      },
      meshRootNamespace: {
        type: "string",
        pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        maxLength: 63,
      },
      // RateLimits reconciled at once: --concurrency's range.
      concurrency: { type: "integer", minimum: 1, maximum: MAX_CONCURRENCY },
      // Which controllers run, each bringing its roles: a module has no other key, so a values
      // file cannot enable a controller without its roles, nor give roles to one that is off.
      modules: {
        type: "object",
        additionalProperties: false,
        required: [...CONTROLLER_NAMES],
        properties: Object.fromEntries(CONTROLLER_NAMES.map((c) => [c, {
          type: "object",
          additionalProperties: false,
          required: ["enabled"],
          properties: { enabled: { type: "boolean" } },
        }])),
        // At least one: --controllers runs one or more.
        anyOf: CONTROLLER_NAMES.map((c) => ({
          properties: { [c]: { properties: { enabled: { const: true } } } },
        })),
      },
      monitoring: {
        type: "object",
        additionalProperties: false,
        required: ["enabled"],
        properties: { enabled: { type: "boolean" } },
      },
      // namespace/name of istiod's Service (--istiod-service), or empty.
      istiodService: {
        type: "string",
        pattern: "^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$",
      },
      // The Redis Secret (--global-redis-secret), in the engine's namespace, or empty: no engine;
      // the engine's image (--global-engine-image), empty for the operator's default. An image
      // without a Secret is half a configuration: refused.
      globalEngine: {
        type: "object",
        additionalProperties: false,
        required: ["redisSecret", "image", "replicas", "resources"],
        properties: {
          redisSecret: {
            type: "string",
            pattern: `^(${GLOBAL_ENGINE_SERVICE.namespace}/${
              unanchored(DNS_SUBDOMAIN.pattern.source)
            })?$`,
            maxLength: GLOBAL_ENGINE_SERVICE.namespace.length + 1 + DNS_SUBDOMAIN.max,
          },
          image: { type: "string", pattern: `^(${unanchored(IMAGE_REFERENCE_PATTERN)})?$` },
          // --global-engine-replicas, --global-engine-requests and --global-engine-limits.
          replicas: { type: "integer", minimum: 1, maximum: MAX_ENGINE_REPLICAS },
          resources: {
            type: "object",
            additionalProperties: false,
            required: ["requests", "limits"],
            properties: Object.fromEntries(["requests", "limits"].map((part) => [part, {
              type: "object",
              additionalProperties: false,
              // Empty would render as no setting, which the operator reads as its defaults.
              minProperties: 1,
              properties: {
                cpu: { type: "string", pattern: NON_NEGATIVE_QUANTITY_PATTERN },
                memory: { type: "string", pattern: NON_NEGATIVE_QUANTITY_PATTERN },
              },
            }])),
          },
        },
        // Without a Secret there is no engine: its settings would be dropped without a word.
        if: { properties: { redisSecret: { const: "" } } },
        then: {
          properties: {
            image: { const: "" },
            replicas: { const: DEFAULT_ENGINE_REPLICAS },
            resources: { const: DEFAULT_ENGINE_RESOURCES },
          },
        },
      },
    },
    // The engine serves RateLimits' global part: refused without the RateLimit controller.
    if: {
      properties: { globalEngine: { properties: { redisSecret: { minLength: 1 } } } },
    },
    then: {
      properties: {
        modules: { properties: { ratelimit: { properties: { enabled: { const: true } } } } },
      },
    },
  };
}
