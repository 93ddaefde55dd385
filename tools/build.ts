/**
 * `./deno task build`: builds everything the tests run besides the operator itself, one build at
 * a time, each as its own step with progress (what is being built, a line at least every 30 s,
 * its time), so that no test builds inside its own timeout and a cold machine shows where its
 * minutes go. Each build is a no-op when its stamp says it is up to date.
 *
 *   ./deno task build                      # every target
 *   ./deno task build --only=cluster       # some targets (comma-separated)
 *   ./deno task build --skip=cluster       # every target but these
 *   ./deno task build --list               # the targets and what each builds
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { clusterBuilds, ensureBuilt } from "./cluster/build.ts";
import { corednsBuild } from "./coredns/build.ts";
import type { GoBuild } from "./gobuild.ts";
import { ensureNodeBuilt } from "./cluster/node/build.ts";
import { crdgenBuild, ensureCrdgen, kedaModule, layout, REPO_ROOT } from "./crdgen/mod.ts";
import { buildImage } from "./image/image.ts";
import { ensureIstioCheck, istioCheckBuild } from "./istio-check/build.ts";
import { buildKedaImages } from "./keda/image.ts";
import { kedaBuilds } from "./keda/build.ts";
import { ensureHelm, helmBuild } from "./helm/build.ts";
import { ensurePrometheus, ensurePromtool, prometheusBuild } from "./prometheus/build.ts";
import { ensureRatelimitEngine } from "./ratelimit-engine/build.ts";
import { ensureRe2Check } from "./re2-check/build.ts";
import { buildEngineImage } from "./ratelimit-engine/image.ts";
import { formatElapsed, type Log, step } from "./progress.ts";

/** One thing `build` can build. */
export interface Target {
  name: string;
  /** What it builds, for `--list` and the log. */
  what: string;
  build: (log: Log) => Promise<void>;
}

/**
 * Every target, in the order CI builds them: first what most tests and the real node need (the
 * control plane, the node's parts, the engine, the images), which `.ci/run` builds before the tests;
 * then the rest, which it builds in the background while the tests run, in the order the files
 * waiting for it need it (istiod and the proxy stand-ins for the most, then KEDA for lane R).
 */
export const TARGETS: readonly Target[] = [
  {
    name: "cluster",
    what: "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok",
    build: async (log) => void await ensureBuilt(log),
  },
  {
    name: "node",
    what: "the real node's kubelet and kube-proxy (one go build), CoreDNS, its small programs",
    build: async (log) => void await ensureNodeBuilt(log),
  },
  {
    name: "ratelimit-engine",
    what: "the global rate limit engine (envoyproxy/ratelimit, Go module) and its test harnesses",
    build: async (log) => void await ensureRatelimitEngine(log),
  },
  {
    name: "image",
    what: "the operator's image (podman, bases made from Debian packages), saved for the node",
    build: async (log) => void await buildImage(log),
  },
  {
    name: "ratelimit-engine-image",
    what: "the global rate limit engine's image (its binary on the runtime base), saved",
    build: async (log) => void await buildEngineImage(log),
  },
  {
    name: "re2-check",
    what:
      "tools/re2-check: Google's RE2 (Debian's libre2, g++), which the model's regexes are held to",
    build: async (log) => void await ensureRe2Check(log),
  },
  {
    name: "istio-check",
    what: "tools/istio-check and istiod (pilot-discovery), one Go build of istio.io/istio",
    build: async (log) => void await ensureIstioCheck(log),
  },
  {
    name: "keda",
    what: "KEDA's operator, metrics API server and webhooks (Go module) and their images, saved",
    build: async (log) => void await buildKedaImages(log),
  },
  {
    name: "crdgen",
    what: "the module CRD generator (controller-tools) and KEDA's module source",
    build: async (log) => {
      const { goModule } = layout(REPO_ROOT);
      await ensureCrdgen(goModule, log);
      await step("downloading KEDA's Go module", log, () => kedaModule(goModule), {
        done: "KEDA's Go module downloaded",
      });
    },
  },
  {
    name: "promtool",
    what: "Prometheus's promtool (Go module): checks deploy/monitoring's rules, runs their tests",
    build: async (log) => void await ensurePromtool(log),
  },
  {
    name: "prometheus",
    what: "Prometheus (Go module, no UI assets, file/HTTP discovery only) for the e2e scrape",
    build: async (log) => void await ensurePrometheus(log),
  },
  {
    name: "helm",
    what: "helm (helm.sh/helm/v3): lints, renders and installs the generated chart",
    build: async (log) => void await ensureHelm(log),
  },
];

/**
 * Go builds that compile one line of the k8s.io modules, each group kept at one version of every
 * module its builds share (their go.mod files say so, and tests/tools/go_versions_test.ts checks
 * it), so that Go's build cache compiles a package they share once: a package compiled against
 * another version of anything below it is compiled again. On two cores that is the difference
 * between compiling client-go once for kwok and istiod or twice. (The control plane is on its own:
 * Kubernetes 1.34 pins its k8s.io modules, KEDA's replace block pins 0.35.)
 */
export async function sharedVersionGroups(): Promise<{ name: string; builds: GoBuild[] }[]> {
  const kwok = (await clusterBuilds()).filter((b) => b.name === "kwok");
  return [
    { name: "k8s.io v0.36: kwok, istiod", builds: [...kwok, await istioCheckBuild()] },
    {
      name: "k8s.io v0.37: CoreDNS, helm, Prometheus",
      builds: [
        await corednsBuild(),
        helmBuild(),
        prometheusBuild("promtool"),
        prometheusBuild("prometheus"),
      ],
    },
    {
      name: "k8s.io v0.35: KEDA, crdgen",
      builds: [...await kedaBuilds(), await crdgenBuild(layout(REPO_ROOT).goModule)],
    },
  ];
}

/**
 * The targets `--only` names (all when undefined), less those `--skip` names, in {@link TARGETS}
 * order; throws naming an unknown one.
 */
export function selectTargets(only: string | undefined, skip?: string): Target[] {
  const named = (list: string, flag: string) => {
    const names = list.split(",").map((n) => n.trim()).filter((n) => n !== "");
    const unknown = names.filter((n) => !TARGETS.some((t) => t.name === n));
    if (unknown.length > 0 || names.length === 0) {
      throw new Error(
        `${flag}: unknown target ${unknown.join(", ") || "(none given)"}; targets: ${
          TARGETS.map((t) => t.name).join(", ")
        }`,
      );
    }
    return names;
  };
  const wanted = only === undefined ? TARGETS.map((t) => t.name) : named(only, "--only");
  const skipped = skip === undefined ? [] : named(skip, "--skip");
  return TARGETS.filter((t) => wanted.includes(t.name) && !skipped.includes(t.name));
}

/**
 * Builds `targets` one after another, logging each with its time and the total. With `doneDir`,
 * each target that ends writes a file of its name there (written whole, then renamed into place),
 * so that what waits for one target need not wait for the others (tools/test_lanes.ts
 * `--built-dir`).
 */
export async function buildAll(
  targets: readonly Target[],
  log: Log,
  doneDir?: string,
): Promise<void> {
  const started = performance.now();
  if (doneDir !== undefined) await Deno.mkdir(doneDir, { recursive: true });
  for (const t of targets) {
    const prefixed: Log = (m) => log(`[${t.name}] ${m}`);
    await t.build(prefixed);
    if (doneDir !== undefined) {
      const tmp = join(doneDir, `.${t.name}.tmp`);
      await Deno.writeTextFile(tmp, "0\n");
      await Deno.rename(tmp, join(doneDir, t.name));
    }
  }
  log(`${targets.length} targets up to date in ${formatElapsed(performance.now() - started)}`);
}

const USAGE =
  "usage: ./deno task build [--only=TARGET,...] [--skip=TARGET,...] [--done-dir=DIR] [--list]";

async function main(argv: string[]): Promise<number> {
  let values: {
    only?: string;
    skip?: string;
    "done-dir"?: string;
    list?: boolean;
    help?: boolean;
  };
  try {
    values = parseArgs({
      args: argv,
      options: {
        only: { type: "string" },
        skip: { type: "string" },
        "done-dir": { type: "string" },
        list: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }).values;
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.list) {
    for (const t of TARGETS) console.log(`${t.name.padEnd(12)} ${t.what}`);
    return 0;
  }
  const log: Log = (m) => console.error(`[build] ${m}`);
  try {
    await buildAll(selectTargets(values.only, values.skip), log, values["done-dir"]);
    return 0;
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
