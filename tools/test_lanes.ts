/**
 * `./deno task test`: the project's test files run in lanes, each lane one `deno test` process
 * at a time. Every file that starts a real node goes to one lane of its own, one file after
 * another (only one real node runs per machine: tools/cluster/node/machine_lock.ts; so do the
 * files that run `./deno task dev`, which has one default cluster per checkout), and those
 * files spend most of their time waiting on Pods, so the other files run meanwhile in `--lanes`
 * further lanes that take batches from one queue, the longest first (by the durations of the
 * previous run when there is one, else by where the file lives). Files of one batch run in one
 * process, one after another, as `deno test` runs them; processes never share a file, a pid or
 * an environment, so a test that names a directory by its pid or sets an environment variable
 * is as alone as in a serial run. The JUnit reports of all processes are merged into
 * `--junit-path`; a process that ends without a report counts as one failed test naming it.
 *
 * With `--late-after=FILE`, the files that use what the rest of the build makes (istiod and the
 * proxy stand-ins, KEDA's images, crdgen, promtool, Prometheus, helm: {@link REST_TARGETS}, in the
 * file or in the files of tests/ it imports) start only once FILE exists, and each lane takes them
 * after every file it can run sooner: `.ci/run` builds what the other files need first, then the
 * rest of the build in the background, which writes FILE (its exit code) when done, so the Go builds
 * the late files need run while the lanes run every file that needs none of them.
 *
 * With `--built-dir=DIR` as well, a late file starts as soon as each target of the rest it needs
 * ({@link REST_TARGETS}) has its file in DIR (`./deno task build --done-dir=DIR` writes one as each
 * target ends), without waiting for the others: the istio files need not wait for KEDA's build.
 *
 * Usage: deno run -A tools/test_lanes.ts [--lanes=N] [--late-lanes=N] [--junit-path=FILE]
 *   [--late-after=FILE] [--built-dir=DIR] [--list] <dir|file>...
 */
import { dirname, join, relative, resolve } from "node:path";

/** How a run is asked for. */
export interface LaneOptions {
  /** Directories or files, as given to `deno test`. */
  roots: string[];
  /**
   * Lanes beside lane R (1 to 8; 1 by default: lane R is the longest, one more lane ends within
   * it on 2 cores, and more load only stretches the timing of lane R's tests).
   */
  lanes: number;
  /**
   * Lanes beside lane R once `--late-after`'s file has appeared (at least `lanes`; by default
   * `lanes`): the background build's cores are free then.
   */
  lateLanes?: number;
  /** Where the merged JUnit report goes. */
  junitPath?: string;
  /** Print the plan only. */
  list: boolean;
  /**
   * A file whose appearance lets the files that need the rest of the build start (the background
   * build's end).
   */
  lateAfter?: string;
  /**
   * A directory where the background build writes a file for each target as it ends: a late
   * batch starts once each target it needs has one (or `lateAfter`'s file has appeared).
   */
  builtDir?: string;
}

/** One `deno test` process: its files, and the lane that runs it. */
export interface Batch {
  files: string[];
  /** Seconds the files took in the previous run, or an estimate. */
  weight: number;
  /** Needs the machine to itself: runs in lane R, one file after another. */
  alone: boolean;
  /** Uses what the rest of the build makes: waits for `--late-after`'s file. */
  late: boolean;
  /** The targets of the rest it uses ({@link REST_TARGETS}); empty when not late. */
  needs: string[];
}

/** One test file as the plan sees it. */
export interface PlannedFile {
  path: string;
  /** Needs the machine to itself ({@link NEEDS_THE_MACHINE}). */
  alone: boolean;
  /** Uses what the rest of the build makes (one of {@link REST_TARGETS}). */
  late: boolean;
  /** The targets of the rest it uses ({@link REST_TARGETS}), sorted; empty when not late. */
  needs: string[];
}

const TEST_FILE = /(^|[._])test\.(ts|tsx|mts|js|mjs|jsx)$/;
/**
 * What a test file that needs the machine to itself says: it starts a real node
 * (tests/e2e/harness.ts's option, or its skip), or runs `./deno task dev` (devTest), whose one
 * default cluster and lock a checkout has once.
 */
const NEEDS_THE_MACHINE = /realNode: true|\bREAL_NODE_SKIP\b|\bdevTest\(/;
/**
 * What a test file (or a file of tests/ it imports) says when it uses what a target of the rest of
 * the build makes, which `.ci/run` builds in the background, target by target: istiod and the proxy stand-ins (istio-check's
 * build; a cluster `up` with `mesh: true`, the dev task's `--mesh`, the mesh fixtures), KEDA's
 * images, the CRD generator and KEDA's module, promtool, Prometheus and helm. Such a file would
 * otherwise wait on the build's lock inside its own test.
 */
export const REST_TARGETS: readonly { target: string; uses: RegExp }[] = [
  {
    target: "istio-check",
    uses:
      /\b(?:ensureIstioCheck|ensurePilotDiscovery|ensureProxyStandin)\b|mesh: true|"--mesh"|proxy-standin\/mod\.ts/,
  },
  { target: "keda", uses: /\bbuildKedaImages\b/ },
  { target: "crdgen", uses: /\b(?:kedaModule|ensureCrdgen)\b|crdgen\/mod\.ts/ },
  { target: "promtool", uses: /\bensurePromtool\b/ },
  { target: "prometheus", uses: /\bensurePrometheus\b|prometheus\/server\.ts/ },
  { target: "helm", uses: /\bensureHelm\b/ },
];
/** Directories whose files each get a process of their own (clusters, builds, long runs). */
const HEAVY =
  /^(tests\/(e2e|istio|bench|global|deploy|kube|dataplane|sim|modules)|tools\/cluster)\//;
const BATCH_FILES = 8;
const DURATIONS = ".cache/ci/test-durations.json";

/** Parses the command line; unknown flags are errors. */
export function parseLaneArgs(args: string[]): LaneOptions {
  const o: LaneOptions = { roots: [], lanes: 1, list: false };
  for (const a of args) {
    const [flag, value] = a.startsWith("--") ? splitFlag(a) : ["", a];
    if (flag === "") o.roots.push(value);
    else if (flag === "--lanes") {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1 || n > 8) {
        throw new Error(`--lanes must be a whole number from 1 to 8, not "${value}"`);
      }
      o.lanes = n;
    } else if (flag === "--late-lanes") {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1 || n > 8) {
        throw new Error(`--late-lanes must be a whole number from 1 to 8, not "${value}"`);
      }
      o.lateLanes = n;
    } else if (flag === "--junit-path" && value) o.junitPath = value;
    else if (flag === "--late-after" && value) o.lateAfter = value;
    else if (flag === "--built-dir" && value) o.builtDir = value;
    else if (flag === "--list" && value === "") o.list = true;
    else {throw new Error(
        `unknown flag ${a} (known: --lanes=N, --late-lanes=N, --junit-path=FILE, --late-after=FILE, --built-dir=DIR, --list)`,
      );}
  }
  if (o.roots.length === 0) throw new Error("name at least one directory or test file");
  return o;
}

function splitFlag(a: string): [string, string] {
  const eq = a.indexOf("=");
  return eq < 0 ? [a, ""] : [a.slice(0, eq), a.slice(eq + 1)];
}

/** The test files under `roots` (as `deno test` finds them), relative to `cwd`, sorted. */
export async function findTestFiles(roots: string[], cwd: string): Promise<string[]> {
  const out = new Set<string>();
  const walk = async (path: string): Promise<void> => {
    const st = await Deno.stat(path);
    if (st.isFile) {
      out.add(relative(cwd, path));
      return;
    }
    for await (const e of Deno.readDir(path)) {
      if (e.name.startsWith(".") || e.name === "node_modules") continue;
      const p = join(path, e.name);
      if (e.isDirectory) await walk(p);
      else if (e.isFile && TEST_FILE.test(e.name)) out.add(relative(cwd, p));
    }
  };
  for (const r of roots) {
    try {
      await walk(resolve(cwd, r));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) throw new Error(`${r}: no such file or directory`);
      throw e;
    }
  }
  return [...out].sort();
}

/**
 * Groups files into processes: the real-node files one each (their lane runs them in order), the
 * files of heavy directories one each, the rest by directory (late files apart) in batches of up to
 * eight; heaviest first.
 */
export function planBatches(
  files: PlannedFile[],
  durations: Record<string, number>,
): Batch[] {
  const guess = (f: string) => durations[f] ?? (HEAVY.test(f) ? 30 : 2);
  const batches: Batch[] = [];
  const light = new Map<string, PlannedFile[]>();
  for (const f of files) {
    if (f.alone || HEAVY.test(f.path)) {
      batches.push({
        files: [f.path],
        weight: guess(f.path),
        alone: f.alone,
        late: f.late,
        needs: f.needs,
      });
    } else {
      // Light files of one directory share a process when they need the same targets.
      const key = `${dirname(f.path)}\n${f.needs.join(",")}`;
      light.set(key, [...(light.get(key) ?? []), f]);
    }
  }
  for (const group of light.values()) {
    for (let i = 0; i < group.length; i += BATCH_FILES) {
      const part = group.slice(i, i + BATCH_FILES);
      batches.push({
        files: part.map((f) => f.path),
        weight: part.reduce((s, f) => s + guess(f.path), 0),
        alone: false,
        late: part[0].late,
        needs: part[0].needs,
      });
    }
  }
  return batches.sort((a, b) => b.weight - a.weight || a.files[0].localeCompare(b.files[0]));
}

/**
 * Reads what the plan needs to know of each file: whether it needs the machine to itself (its own
 * text), and whether it uses the rest of the build (its text, that of the files of tests/ it imports,
 * followed through tests/, and that of the files of bench/ those import; the tools and src they
 * import are not read, since every cluster test imports tools/cluster, which can start istiod when
 * asked to).
 */
export async function classifyFiles(paths: string[], cwd: string): Promise<PlannedFile[]> {
  const texts = new Map<string, Promise<string>>();
  const read = (path: string) => {
    let t = texts.get(path);
    if (!t) texts.set(path, t = Deno.readTextFile(join(cwd, path)).catch(() => ""));
    return t;
  };
  const restNeeded = async (path: string): Promise<string[]> => {
    const seen = new Set<string>();
    const needs = new Set<string>();
    for (const todo = [path]; todo.length > 0;) {
      const p = todo.pop()!;
      if (seen.has(p)) continue;
      seen.add(p);
      const text = await read(p);
      for (const { target, uses } of REST_TARGETS) if (uses.test(text)) needs.add(target);
      if (p !== path && !p.startsWith("tests/")) continue;
      for (const m of text.matchAll(/\b(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
        const next = relative(cwd, resolve(cwd, dirname(p), m[1]));
        if (/^(tests|bench)\//.test(next)) todo.push(next);
      }
    }
    return [...needs].sort();
  };
  return await Promise.all(paths.map(async (path) => {
    const needs = await restNeeded(path);
    return { path, alone: NEEDS_THE_MACHINE.test(await read(path)), late: needs.length > 0, needs };
  }));
}

/** Merges JUnit reports into one `<testsuites>` with summed counts. */
export function mergeJunit(reports: string[]): string {
  let tests = 0, failures = 0, errors = 0, time = 0;
  const suites: string[] = [];
  for (const r of reports) {
    const m = r.match(/<testsuites\b([^>]*)>([\s\S]*)<\/testsuites>/);
    if (!m) continue;
    const attr = (name: string) => Number(m[1].match(new RegExp(`\\b${name}="([^"]*)"`))?.[1] ?? 0);
    tests += attr("tests");
    failures += attr("failures");
    errors += attr("errors");
    time += attr("time");
    suites.push(m[2].trim());
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<testsuites name="deno test (lanes)" tests="${tests}" failures="${failures}" ` +
    `errors="${errors}" time="${time.toFixed(3)}">\n${suites.join("\n")}\n</testsuites>\n`;
}

/** A JUnit report of one failed test, for a process that ended without writing its own. */
export function missingReport(files: string[], code: number): string {
  const name = xmlEscape(`deno test ${files.join(" ")}`);
  return `<testsuites tests="1" failures="1" errors="0" time="0">` +
    `<testsuite name="${name}" tests="1" failures="1" errors="0">` +
    `<testcase name="${name}" classname="lanes"><failure message="${
      xmlEscape(`exited with code ${code} without a JUnit report`)
    }"/></testcase></testsuite></testsuites>`;
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;",
  );
}

interface Outcome {
  batch: Batch;
  lane: string;
  code: number;
  seconds: number;
  report: string;
  /** The process's last {@link TAIL_LINES} lines of output, stdout and stderr as they came. */
  tail: string[];
}

/**
 * Lines of a failed process's output shown again at the end of the run: a CI log is often seen
 * only by its end, and a failure's error and the figures before it are what explain it.
 */
export const TAIL_LINES = 80;

async function pipeLines(
  stream: ReadableStream<Uint8Array>,
  prefix: string,
  tail: string[],
): Promise<void> {
  const enc = new TextEncoder();
  const keep = (lines: string[]) => {
    tail.push(...lines);
    if (tail.length > TAIL_LINES) tail.splice(0, tail.length - TAIL_LINES);
  };
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop() ?? "";
    if (lines.length) {
      keep(lines);
      await Deno.stdout.write(enc.encode(lines.map((l) => `${prefix}${l}\n`).join("")));
    }
  }
  if (rest) {
    keep([rest]);
    await Deno.stdout.write(enc.encode(`${prefix}${rest}\n`));
  }
}

async function runBatch(
  batch: Batch,
  lane: string,
  dir: string,
  n: number,
  cwd: string,
): Promise<Outcome> {
  const junit = join(dir, `${n}.xml`);
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--frozen", `--junit-path=${junit}`, ...batch.files],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const prefix = `[${lane}] `;
  const tail: string[] = [];
  await Promise.all([pipeLines(child.stdout, prefix, tail), pipeLines(child.stderr, prefix, tail)]);
  const { code } = await child.status;
  const seconds = (performance.now() - t0) / 1000;
  let report: string;
  try {
    report = await Deno.readTextFile(junit);
  } catch {
    report = missingReport(batch.files, code);
  }
  return { batch, lane, code, seconds, report, tail };
}

async function readDurations(path: string): Promise<Record<string, number>> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as Record<string, number>;
  } catch {
    return {};
  }
}

/** Runs the plan; returns the process's exit code (0 when every process passed). */
export async function runLanes(o: LaneOptions, cwd = Deno.cwd()): Promise<number> {
  const paths = await findTestFiles(o.roots, cwd);
  const files = await classifyFiles(paths, cwd);
  const durationsPath = join(cwd, DURATIONS);
  const durations = await readDurations(durationsPath);
  const batches = planBatches(files, durations);
  const real = batches.filter((b) => b.alone);
  const queue = batches.filter((b) => !b.alone);
  const sum = (bs: Batch[]) => Math.round(bs.reduce((s, b) => s + b.weight, 0));
  console.log(
    `lanes: ${paths.length} files in ${batches.length} processes; real-node lane ` +
      `${real.length} files (~${sum(real)} s), ${o.lanes} other lane(s) ${
        queue.reduce((s, b) => s + b.files.length, 0)
      } files (~${sum(queue)} s)` +
      (Object.keys(durations).length ? ` (weights from ${DURATIONS})` : " (weights guessed)") +
      `; ${batches.filter((b) => b.late).length} processes use the rest of the build`,
  );
  if (o.list) {
    for (const b of [...real, ...queue]) {
      console.log(
        `${b.alone ? "R" : "-"}${b.late ? " late" : ""} ${Math.round(b.weight)}s ${
          b.files.join(" ")
        }`,
      );
    }
    return 0;
  }
  // The late files wait for the rest of the build; each lane takes them after all it can run sooner.
  let restBuilt = o.lateAfter === undefined;
  const restWaiter = restBuilt
    ? Promise.resolve()
    : waitForFile(resolve(cwd, o.lateAfter!)).then(() => void (restBuilt = true));
  // With --built-dir, each target of the rest as it ends (its file there) lets the files that
  // need only what has ended start.
  const built = new Set<string>();
  const t0Built = performance.now();
  const readBuilt = async () => {
    if (o.builtDir === undefined || restBuilt) return;
    for (const { target } of REST_TARGETS) {
      if (built.has(target)) continue;
      try {
        await Deno.stat(join(resolve(cwd, o.builtDir), target));
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) continue;
        throw e;
      }
      built.add(target);
      console.log(
        `lanes: ${target} built after ${
          fmtTime((performance.now() - t0Built) / 1000)
        }; the files that need only what is built may start`,
      );
    }
  };
  const ready = (b: Batch) => restBuilt || !b.late || b.needs.every((t) => built.has(t));
  const take = async (from: Batch[]): Promise<Batch | undefined> => {
    for (;;) {
      await readBuilt();
      const i = from.findIndex(ready);
      if (i >= 0) return from.splice(i, 1)[0];
      if (from.length === 0) return undefined;
      await (o.builtDir === undefined
        ? restWaiter
        : Promise.race([restWaiter, new Promise((r) => setTimeout(r, 1_000))]));
    }
  };
  const dir = await Deno.makeTempDir({ prefix: "test-lanes-" });
  const t0 = performance.now();
  const outcomes: Outcome[] = [];
  let n = 0;
  const lane = async (name: string, from: Batch[]) => {
    for (let b = await take(from); b; b = await take(from)) {
      const o = await runBatch(b, name, dir, n++, cwd);
      outcomes.push(o);
      console.log(
        `[${name}] ${o.code === 0 ? "ok" : "FAILED"} in ${o.seconds.toFixed(0)} s: ${
          b.files.join(" ")
        }`,
      );
    }
  };
  const more = Math.max(0, (o.lateLanes ?? o.lanes) - o.lanes);
  await Promise.all([
    lane("R", real),
    ...Array.from({ length: o.lanes }, (_, i) => lane(String(i + 1), queue)),
    // Once the background build has ended its cores are free: more lanes take from the queue.
    restWaiter.then(() =>
      Promise.all(Array.from({ length: more }, (_, i) => lane(String(o.lanes + i + 1), queue)))
    ),
  ]);
  const wall = (performance.now() - t0) / 1000;
  if (o.junitPath) {
    await Deno.mkdir(dirname(resolve(cwd, o.junitPath)), { recursive: true });
    await Deno.writeTextFile(resolve(cwd, o.junitPath), mergeJunit(outcomes.map((x) => x.report)));
  }
  const next: Record<string, number> = { ...durations };
  for (const x of outcomes) {
    for (const f of x.batch.files) next[f] = Math.round(x.seconds / x.batch.files.length);
  }
  await Deno.mkdir(dirname(durationsPath), { recursive: true });
  await Deno.writeTextFile(durationsPath, JSON.stringify(next, null, 1) + "\n");
  await Deno.remove(dir, { recursive: true });
  const failed = outcomes.filter((x) => x.code !== 0);
  const busy = (name: string) =>
    outcomes.filter((x) => x.lane === name).reduce((s, x) => s + x.seconds, 0);
  console.log(
    `lanes: wall ${fmtTime(wall)}; busy R ${fmtTime(busy("R"))}, ` +
      Array.from(
        { length: Math.max(o.lanes, o.lateLanes ?? 0) },
        (_, i) => `${i + 1} ${fmtTime(busy(String(i + 1)))}`,
      ).join(
        ", ",
      ) + `; ${outcomes.length - failed.length} processes passed, ${failed.length} failed`,
  );
  for (const x of failed) {
    console.log(
      `lanes: the last ${x.tail.length} lines of ${x.batch.files.join(" ")} (exit ${x.code}):`,
    );
    for (const l of x.tail) console.log(`  | ${l}`);
  }
  for (const x of failed) console.log(`lanes: FAILED (exit ${x.code}): ${x.batch.files.join(" ")}`);
  return failed.length ? 1 : 0;
}

/** Waits until `path` exists, saying so at the start, every 5 minutes and at the end. */
async function waitForFile(path: string): Promise<void> {
  const t0 = performance.now();
  let said = -1;
  for (;;) {
    try {
      const text = (await Deno.readTextFile(path)).trim();
      console.log(
        `lanes: ${path} appeared after ${fmtTime((performance.now() - t0) / 1000)}` +
          (text ? ` (${text})` : "") + "; the files that use the rest of the build may start",
      );
      return;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    const minutes = Math.floor((performance.now() - t0) / 300_000);
    if (minutes !== said) {
      said = minutes;
      console.log(`lanes: the files that use the rest of the build wait for ${path}`);
    }
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

function fmtTime(seconds: number): string {
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

if (import.meta.main) {
  let opts: LaneOptions;
  try {
    opts = parseLaneArgs(Deno.args);
  } catch (e) {
    console.error(`test_lanes: ${(e as Error).message}`);
    Deno.exit(2);
  }
  Deno.exit(await runLanes(opts));
}
