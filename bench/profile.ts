/**
 * Summarises a V8 `.cpuprofile` (from `deno run --cpu-prof`) as the functions with the most self
 * time and the most total time, so a profile can be read in a terminal and quoted in RESULTS.md.
 *
 * `deno run -A bench/profile.ts FILE.cpuprofile [--top=N] [--filter=TEXT]`
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The parts of a `.cpuprofile` this reads. */
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self and total milliseconds of one function (all its nodes together). */
export interface FunctionTime {
  name: string;
  selfMs: number;
  totalMs: number;
}

function label(f: CallFrame): string {
  const file = f.url.replace(/^.*\/(src|bench|sim|node_modules|ext)\//, "$1/");
  return `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`;
}

/** Self and total time a function, heaviest total first. */
export function summarise(p: CpuProfile): FunctionTime[] {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000));
  const out = new Map<string, FunctionTime>();
  const get = (name: string) => {
    let t = out.get(name);
    if (!t) out.set(name, t = { name, selfMs: 0, totalMs: 0 });
    return t;
  };
  for (const [id, ms] of self) {
    get(label(byId.get(id)!.callFrame)).selfMs += ms;
    // Total: every distinct function on the stack gets the sample once (recursion counted once).
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const name = label(byId.get(cur)!.callFrame);
      if (!seen.has(name)) get(name).totalMs += ms;
      seen.add(name);
    }
  }
  return [...out.values()].sort((a, b) => b.totalMs - a.totalMs);
}

/** Milliseconds of one step of a subject, and its share of the subject's samples. */
export interface StepTime {
  step: string;
  ms: number;
  share: number;
}

/**
 * The samples taken inside `subject` (a function name) called from `under` (one, when given: the
 * timed loop, not the set-up), grouped by step: a sample belongs to the step of the outermost
 * function below `subject` that `steps` lists (a step's functions may call another step's, which
 * then counts for the caller), else to `other`. Steps in `steps` order, then `other`; the garbage
 * collector's samples are outside every subject and are not counted.
 */
export function stepShares(
  p: CpuProfile,
  subject: string,
  steps: Readonly<Record<string, readonly string[]>>,
  opts: { under?: string; other?: string } = {},
): StepTime[] {
  const other = opts.other ?? "other";
  const stepOf = new Map<string, string>();
  for (const [step, fns] of Object.entries(steps)) for (const f of fns) stepOf.set(f, step);
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  /** The step of a leaf node: undefined outside the subject. */
  const known = new Map<number, string | undefined>();
  const classify = (leaf: number): string | undefined => {
    if (known.has(leaf)) return known.get(leaf);
    let step: string | undefined;
    let inside = false;
    let cur: number | undefined = leaf;
    for (; cur !== undefined; cur = parent.get(cur)) {
      const name = byId.get(cur)!.callFrame.functionName;
      if (name === subject) {
        inside = true;
        break;
      }
      step = stepOf.get(name) ?? step;
    }
    if (inside && opts.under !== undefined) {
      inside = false;
      for (; cur !== undefined && !inside; cur = parent.get(cur)) {
        inside = byId.get(cur)!.callFrame.functionName === opts.under;
      }
    }
    const out = inside ? step ?? other : undefined;
    known.set(leaf, out);
    return out;
  };
  const ms = new Map<string, number>([...Object.keys(steps), other].map((s) => [s, 0]));
  let total = 0;
  p.samples.forEach((id, i) => {
    const step = classify(id);
    if (step === undefined) return;
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    ms.set(step, ms.get(step)! + dt);
    total += dt;
  });
  return [...ms].map(([step, t]) => ({ step, ms: t, share: total > 0 ? t / total : 0 }));
}

if (import.meta.main) {
  const [file, ...rest] = Deno.args;
  if (!file) {
    console.error("usage: deno run -A bench/profile.ts FILE.cpuprofile [--top=N] [--filter=TEXT]");
    Deno.exit(2);
  }
  const top = Number(rest.find((a) => a.startsWith("--top="))?.slice(6) ?? 30);
  const filter = rest.find((a) => a.startsWith("--filter="))?.slice(9);
  const rows = summarise(JSON.parse(await Deno.readTextFile(file)) as CpuProfile)
    .filter((r) => !filter || r.name.includes(filter));
  const pad = (x: number) => x.toFixed(1).padStart(9);
  console.log(`${"self ms".padStart(9)} ${"total ms".padStart(9)}  function`);
  console.log("-- by self time");
  for (const r of [...rows].sort((a, b) => b.selfMs - a.selfMs).slice(0, top)) {
    console.log(`${pad(r.selfMs)} ${pad(r.totalMs)}  ${r.name}`);
  }
  console.log("-- by total time");
  for (const r of rows.slice(0, top)) console.log(`${pad(r.selfMs)} ${pad(r.totalMs)}  ${r.name}`);
}
