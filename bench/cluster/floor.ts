/**
 * The floors under the operator's idle memory: what `deno run` holds, started as the operator is
 * (its Deno flags and environment), for programs that do less than the operator: nothing, its
 * module graph loaded, its connections to the API server held (floor_connections.ts), or both.
 * The operator's figure over the highest floor is what its caches and its running hold.
 */
import { join } from "node:path";
import { parse } from "yaml";
import { OPERATOR_DENO_FLAGS, OPERATOR_ENV, REPO_ROOT } from "../../tools/operator/process.ts";
import type { Report } from "../report.ts";
import { ALL_CONTROLLERS } from "../../src/controllers/registry.ts";
import { collectionPath, withQuery } from "../../src/kube/paths.ts";
import {
  type ControllerSpec,
  DEFAULT_LEASE_NAME,
  DEFAULT_NAMESPACE,
  planWatches,
} from "../../src/runtime/mod.ts";
import { DEFAULT_PAGE_SIZE } from "../../src/runtime/mod.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { BENCH_DIR } from "./env.ts";
import { rssSplit } from "./idle.ts";
import { extraDenoArgs, type Memory } from "./operator.ts";

/** One floor program: what it does, and its code (run from the repository, so imports resolve). */
export interface Floor {
  name: string;
  code: string;
  /** It talks to the API server as the operator does (floor_connections.ts): needs a FloorCluster. */
  connects?: boolean;
}

/** How a connecting floor reaches the API server, as the operator's user. */
export interface FloorCluster {
  server: string;
  caPem: string;
  token: string;
}

/** The operator's lease (its default --lease-namespace and --lease-name, which the bench keeps). */
const LEASE_PATH = `${collectionPath(RESOURCES.Lease, DEFAULT_NAMESPACE)}/${DEFAULT_LEASE_NAME}`;

/**
 * The collections the manager lists and watches with no primary present: every planned watch but
 * those opened only for a primary (a module's secondaries, once a Serverless or Scaler exists).
 */
export function watchedPaths(controllers: readonly ControllerSpec[] = ALL_CONTROLLERS): string[] {
  return planWatches(controllers).filter((w) => !w.wakers).map((w) => {
    const path = collectionPath(w.type, w.ownNamespace ? "platform-system" : undefined);
    return w.selector ? withQuery(path, { labelSelector: w.selector }) : path;
  });
}

/** The floors measured beside the operator's idle figure. */
export const FLOORS: readonly Floor[] = [
  { name: "Deno running an empty script", code: "" },
  {
    name: "Deno serving HTTP on loopback and fetching from it once",
    code: `const s = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () =>
      new Response("ok"));
    await (await fetch(\`http://127.0.0.1:\${s.addr.port}/\`)).text();`,
  },
  {
    // The floor files live in .cache/bench/: the operator's entry module, loaded, never run.
    name: "Deno loading the operator's whole module graph and running none of it",
    code: `import "../../src/cli/run.ts";`,
  },
  {
    name: "Deno holding the operator's connections (its lists and watches over HTTP/2, a read " +
      "and a write each 2 s, two listeners) and running none of its code",
    code: `import "../../bench/cluster/floor_connections.ts";`,
    connects: true,
  },
  {
    name:
      "Deno loading the operator's module graph and holding its connections, running none of it",
    code: `import "../../src/cli/run.ts";
    import "../../bench/cluster/floor_connections.ts";`,
    connects: true,
  },
];

/** VmRSS (MB) of a floor program 3 s after it ran, read by the program itself. */
export async function floorRss(
  floor: Floor,
  index: number,
  cluster?: FloorCluster,
): Promise<number> {
  return (await floorMemory(floor, index, cluster)).rssMb;
}

/** A floor program's resident memory and its anonymous and file-backed parts (MB). */
export type FloorMemory = Pick<Memory, "rssMb" | "anonMb" | "fileMb">;

/**
 * VmRSS (MB) of a floor program 3 s after it ran, with its RssAnon and RssFile, read by the
 * program itself.
 */
export async function floorMemory(
  floor: Floor,
  index: number,
  cluster?: FloorCluster,
): Promise<FloorMemory> {
  if (floor.connects && !cluster) throw new Error(`floor ${floor.name}: needs a cluster`);
  const connection = floor.connects && cluster ? connectionEnv(cluster) : {};
  const file = join(BENCH_DIR, `floor-${index}.ts`);
  await Deno.mkdir(BENCH_DIR, { recursive: true });
  await Deno.writeTextFile(
    file,
    `${floor.code}
    await new Promise((r) => setTimeout(r, 3000));
    const status = await Deno.readTextFile("/proc/self/status");
    console.log(["VmRSS", "RssAnon", "RssFile"]
      .map((f) => new RegExp(\`^\${f}:\\\\s+(\\\\d+) kB\`, "m").exec(status)![1]).join(" "));
    Deno.exit(0);
`,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--cached-only", ...OPERATOR_DENO_FLAGS, ...extraDenoArgs(), file],
    cwd: REPO_ROOT,
    env: { ...OPERATOR_ENV, NO_COLOR: "1", ...connection },
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`floor ${floor.name}: ${new TextDecoder().decode(out.stderr)}`);
  }
  const [rss, anon, mapped] = new TextDecoder().decode(out.stdout).trim().split(" ").map((kb) =>
    Number(kb) / 1024
  );
  return { rssMb: rss, anonMb: anon, fileMb: mapped };
}

/** What a connecting floor program reads: the API server, the operator's user, what to list. */
function connectionEnv(cluster: FloorCluster): Record<string, string> {
  return {
    FLOOR_SERVER: cluster.server,
    FLOOR_CA: cluster.caPem,
    FLOOR_TOKEN: cluster.token,
    FLOOR_WATCHES: watchedPaths().join(" "),
    FLOOR_PAGE_SIZE: String(DEFAULT_PAGE_SIZE),
    FLOOR_LEASE: LEASE_PATH,
  };
}

/** What the start-up floors do (floor_startup.ts), for the report, without and with the code. */
export const STARTUP_FLOORS = {
  lists:
    "Deno listing and parsing what the operator lists before its first reconcile, nothing else",
  code: "Deno loading the operator's whole module graph (running none of it), then listing and " +
    "parsing what the operator lists before its first reconcile",
} as const;

/**
 * Milliseconds from spawning a start-up floor (floor_startup.ts; with `code`, after loading the
 * operator's module graph as the idle floors do), with the operator's Deno flags and environment,
 * to its last list parsed: taken as the operator's start-up is, spawn to a wall-clock time the
 * program reports.
 */
export async function startupFloorMs(
  cluster: FloorCluster,
  floor: keyof typeof STARTUP_FLOORS = "lists",
): Promise<number> {
  let program = join(REPO_ROOT, "bench/cluster/floor_startup.ts");
  if (floor === "code") {
    // In .cache/bench/ as the idle floors are: the graph is evaluated before the lists begin.
    program = join(BENCH_DIR, "floor-startup-code.ts");
    await Deno.mkdir(BENCH_DIR, { recursive: true });
    await Deno.writeTextFile(
      program,
      `import "../../src/cli/run.ts";\nimport "../../bench/cluster/floor_startup.ts";\n`,
    );
  }
  const spawned = Date.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--cached-only",
      ...OPERATOR_DENO_FLAGS,
      ...extraDenoArgs(),
      program,
    ],
    cwd: REPO_ROOT,
    env: { ...OPERATOR_ENV, NO_COLOR: "1", ...connectionEnv(cluster) },
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`start-up floor: ${new TextDecoder().decode(out.stderr)}`);
  return Number(new TextDecoder().decode(out.stdout).trim()) - spawned;
}

/** A floor and its figure (MB), with the figure's anonymous and file-backed parts. */
export interface FloorFigure {
  floor: Floor;
  mb: number;
  anonMb: number;
  fileMb: number;
}

/**
 * Measures every floor into `report` (one row each); the connecting ones only with a `cluster`.
 * Returns the figures in FLOORS order, those measured.
 */
export async function addFloors(
  report: Pick<Report, "add">,
  section: string,
  cluster?: FloorCluster,
): Promise<FloorFigure[]> {
  const figures: FloorFigure[] = [];
  for (const [i, floor] of FLOORS.entries()) {
    if (floor.connects && !cluster) continue;
    const m = await floorMemory(floor, i, cluster);
    figures.push({ floor, mb: m.rssMb, anonMb: m.anonMb, fileMb: m.fileMb });
    report.add({
      section,
      name: `floor: ${floor.name}`,
      value: m.rssMb,
      unit: "MB",
      note: `VmRSS 3 s after it ran, started with the operator's Deno flags and environment, ${
        rssSplit(m)
      }`,
    });
  }
  return figures;
}

/** A connecting floor's access from a one-context, token kubeconfig (the bench's operator user). */
export async function floorClusterFrom(kubeconfig: string): Promise<FloorCluster> {
  const kc = parse(await Deno.readTextFile(kubeconfig)) as {
    clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
    users: { user: { token: string } }[];
  };
  const { server, "certificate-authority-data": ca } = kc.clusters[0].cluster;
  return { server, caPem: atob(ca), token: kc.users[0].user.token };
}
