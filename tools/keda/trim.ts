/**
 * KEDA's source with its scalers cut down to the triggers the project's tests use. KEDA's
 * `pkg/scalers` is one Go package holding every scaler, so every program of KEDA compiles every
 * cloud SDK (Datadog's API client, Azure's, AWS's, Google's, Kafka, MongoDB, SQL drivers, …): on a
 * two-core machine that was most of a cold CI's 29 minutes of KEDA. The trimmed tree is KEDA's
 * module copied under `.cache/keda/src`, with the scaler files no kept trigger needs deleted and
 * the switch of `buildScaler` (between KEDA's `// TRIGGERS-START` and `// TRIGGERS-END`) reduced to
 * the kept triggers' cases; everything else (the controllers, the webhooks, the metrics server,
 * the scale handler, the default case's "no scaler found for type" error) is KEDA's code as
 * released. The build reads it through a go.mod of its own (`-modfile`): the wrapper's, plus a
 * `replace` of KEDA's module by the trimmed tree.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { exists, writeFileAtomic } from "../files.ts";

/** The triggers the built KEDA keeps: those the tests' ScaledObjects use (cron, metrics-api, cpu). */
export const KEDA_TRIGGERS: readonly string[] = ["cpu", "memory", "cron", "metrics-api"];

/** The file holding `buildScaler`, relative to KEDA's module. */
export const BUILDER_FILE = "pkg/scaling/scalers_builder.go";
/** The package holding every scaler, relative to KEDA's module. */
export const SCALERS_DIR = "pkg/scalers";
/** Constants the kept scalers use but a left-out scaler file declares; copied from it. */
const BORROWED_CONSTS: readonly string[] = ["externalMetricType"];

const START = "// TRIGGERS-START";
const END = "// TRIGGERS-END";

/** `buildScaler`'s source with only the cases naming a kept trigger, and their constructors. */
export interface TrimmedBuilder {
  text: string;
  /** The trigger names of the cases kept, in KEDA's order. */
  triggers: string[];
  /** The `scalers.NewX` functions those cases call. */
  constructors: string[];
}

/**
 * Keeps, of the `switch` between KEDA's trigger markers, the `case` clauses naming a trigger of
 * `kept`, and the `default` clause. Throws when the markers are missing (KEDA changed its layout)
 * or a kept trigger has no case.
 */
export function trimBuilder(source: string, kept: readonly string[]): TrimmedBuilder {
  const start = source.indexOf(START);
  const end = source.indexOf(END);
  if (start < 0 || end < start) {
    throw new Error(`${BUILDER_FILE}: no "${START}" … "${END}" around buildScaler's switch`);
  }
  const lineStart = source.lastIndexOf("\n", end) + 1;
  const region = source.slice(start + START.length, lineStart).split("\n");
  const head: string[] = [];
  const clauses: { names: string[]; lines: string[] }[] = [];
  for (const line of region) {
    const c = /^\s*case (.+):\s*$/.exec(line);
    if (c) {
      clauses.push({ names: [...c[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]), lines: [line] });
    } else if (/^\s*default:\s*$/.test(line)) {
      clauses.push({ names: [], lines: [line] });
    } else if (clauses.length === 0) {
      head.push(line);
    } else {
      clauses[clauses.length - 1].lines.push(line);
    }
  }
  if (!clauses.some((c) => c.names.length === 0)) {
    throw new Error(`${BUILDER_FILE}: buildScaler's switch has no default case`);
  }
  const keptClauses = clauses.filter((c) =>
    c.names.length === 0 || c.names.some((n) => kept.includes(n))
  );
  const triggers = keptClauses.flatMap((c) => c.names);
  const missing = kept.filter((t) => !triggers.includes(t));
  if (missing.length > 0) {
    throw new Error(`${BUILDER_FILE}: buildScaler has no case for ${missing.join(", ")}`);
  }
  const body = keptClauses.flatMap((c) => c.lines);
  const constructors = [
    ...new Set(body.join("\n").matchAll(/scalers\.(New\w+)\(/g).map((m) => m[1])),
  ];
  const text = source.slice(0, start + START.length) + [...head, ...body].join("\n") +
    source.slice(lineStart);
  return { text, triggers, constructors };
}

/** The scaler files (`*_scaler.go`) of `pkg/scalers`, by name, with their text. */
async function scalerFiles(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.endsWith("_scaler.go")) {
      files.set(e.name, await Deno.readTextFile(join(dir, e.name)));
    }
  }
  return files;
}

/** What {@link trimSource} did, for the log and the tests. */
export interface TrimReport {
  triggers: string[];
  keptFiles: string[];
  removedFiles: number;
  /** Constants copied from a left-out file into `zz_trimmed.go`. */
  borrowed: string[];
}

/**
 * Trims a writable copy of KEDA's module in place: `buildScaler` keeps the cases of `kept`, the
 * scaler files declaring none of their constructors are deleted (test files with them), and the
 * constants the kept files need from a deleted one are declared in `zz_trimmed.go`, their values
 * copied from KEDA's file.
 */
export async function trimSource(
  dir: string,
  kept: readonly string[] = KEDA_TRIGGERS,
): Promise<TrimReport> {
  const builderPath = join(dir, BUILDER_FILE);
  const builder = trimBuilder(await Deno.readTextFile(builderPath), kept);
  const scalersDir = join(dir, SCALERS_DIR);
  const files = await scalerFiles(scalersDir);
  const keptFiles = [...files].filter(([, text]) =>
    builder.constructors.some((f) => new RegExp(`^func ${f}\\(`, "m").test(text))
  ).map(([name]) => name).sort();
  const declared = new Set(
    keptFiles.flatMap((f) => [...files.get(f)!.matchAll(/^func (New\w+)\(/gm)].map((m) => m[1])),
  );
  const undeclared = builder.constructors.filter((f) => !declared.has(f));
  if (undeclared.length > 0) {
    throw new Error(`${SCALERS_DIR}: no scaler file declares ${undeclared.join(", ")}`);
  }
  const borrowed: string[] = [];
  for (const name of BORROWED_CONSTS) {
    const used = keptFiles.some((f) => new RegExp(`\\b${name}\\b`).test(files.get(f)!));
    const decl = new RegExp(`^\\s*${name}\\s*=\\s*("[^"]*")`, "m");
    if (!used || keptFiles.some((f) => decl.test(files.get(f)!))) continue;
    const value = [...files.values()].map((t) => decl.exec(t)?.[1]).find((v) => v !== undefined);
    if (value === undefined) throw new Error(`${SCALERS_DIR}: ${name} is declared nowhere`);
    borrowed.push(`const ${name} = ${value}`);
  }
  let removedFiles = 0;
  for (const name of files.keys()) {
    if (keptFiles.includes(name)) continue;
    for (const f of [name, name.replace(/\.go$/, "_test.go")]) {
      if (await exists(join(scalersDir, f))) {
        await Deno.remove(join(scalersDir, f));
        removedFiles++;
      }
    }
  }
  if (borrowed.length > 0) {
    await Deno.writeTextFile(
      join(scalersDir, "zz_trimmed.go"),
      "// Written by tools/keda/trim.ts: declared in a scaler file the trimmed build leaves out.\n" +
        `package scalers\n\n${borrowed.join("\n")}\n`,
    );
  }
  await Deno.writeTextFile(builderPath, builder.text);
  return { triggers: builder.triggers, keptFiles, removedFiles, borrowed };
}

/** Runs a command, throwing with its stderr when it fails. */
async function run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/**
 * Makes `out` the trimmed copy of KEDA's module at `moduleDir` (the module cache's, read-only),
 * unless `out` already holds the copy made from the same module and triggers (its `.trimmed`
 * record). Returns the record's report.
 */
export async function trimmedCopy(
  moduleDir: string,
  out: string,
  kept: readonly string[] = KEDA_TRIGGERS,
): Promise<TrimReport> {
  const record = join(out, ".trimmed.json");
  const key = JSON.stringify({ moduleDir, kept });
  try {
    const saved = JSON.parse(await Deno.readTextFile(record)) as {
      key: string;
      report: TrimReport;
    };
    if (saved.key === key) return saved.report;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound) && !(e instanceof SyntaxError)) throw e;
  }
  const tmp = `${out}.tmp`;
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
  await Deno.mkdir(dirname(out), { recursive: true });
  await run("cp", ["-r", moduleDir, tmp]);
  await run("chmod", ["-R", "u+w", tmp]);
  const report = await trimSource(tmp, kept);
  await writeFileAtomic(join(tmp, ".trimmed.json"), JSON.stringify({ key, report }, null, 2));
  await Deno.remove(out, { recursive: true }).catch(() => {});
  await Deno.rename(tmp, out);
  return report;
}

/** The wrapper's go.mod with KEDA's module replaced by the trimmed tree at `srcDir`. */
export function trimmedGoMod(wrapperGoMod: string, module: string, srcDir: string): string {
  return `${wrapperGoMod.trimEnd()}\n\n// Written by tools/keda/trim.ts.\nreplace ${module} => ${srcDir}\n`;
}
