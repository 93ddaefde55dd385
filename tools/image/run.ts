/**
 * Running the image build's external tools: each one checked before anything starts (a missing
 * tool names the package that provides it), each step with the progress lines of
 * tools/progress.ts, its output kept in a log whose tail a failure shows.
 */
import { join } from "node:path";
import { formatElapsed, step as progressStep } from "../progress.ts";
import { ROOT } from "./lock.ts";

/** Where the build keeps its downloads, root filesystems, logs and the saved image. */
export const CACHE: string = join(ROOT, ".cache", "image");

/** A tool the build needs and how to get it on Debian or Ubuntu. */
export interface Tool {
  command: string;
  /** Arguments that make it print its version and exit 0. */
  probe: string[];
  install: string;
  why: string;
}

/** The tools `./deno task image` runs. */
export const TOOLS: readonly Tool[] = [
  {
    command: "podman",
    probe: ["--version"],
    install: "apt-get install podman",
    why: "imports the base images, builds the Dockerfile, runs and saves the image",
  },
  {
    command: "runc",
    probe: ["--version"],
    install: "apt-get install runc",
    why: "the OCI runtime the build's RUN steps and the image's test run use",
  },
  {
    command: "apt-get",
    probe: ["--version"],
    install: "a Debian or Ubuntu machine (apt-get update first)",
    why: "downloads the Debian packages the runtime base is made of",
  },
  {
    command: "dpkg-deb",
    probe: ["--version"],
    install: "apt-get install dpkg",
    why: "unpacks those packages into the base's root filesystem",
  },
  {
    command: "tar",
    probe: ["--version"],
    install: "apt-get install tar",
    why: "packs the root filesystems for podman import",
  },
];

/** Thrown for a failure the user can act on: the message says what to do. */
export class BuildError extends Error {}

/** Undefined when `command` runs and answers `probe`; else what went wrong. */
async function probeTool(command: string, probe: string[]): Promise<string | undefined> {
  try {
    const out = await new Deno.Command(command, { args: probe, stdout: "null", stderr: "piped" })
      .output();
    if (out.success) return undefined;
    const err = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1);
    return `\`${command} ${probe.join(" ")}\` failed: ${err}`;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "not found on PATH";
    return (e as Error).message;
  }
}

/** The tools of `tools` that are missing or broken, as one message; undefined when all run. */
export async function missingTools(tools: readonly Tool[] = TOOLS): Promise<string | undefined> {
  const problems: [Tool, string][] = [];
  for (const t of tools) {
    const problem = await probeTool(t.command, t.probe);
    if (problem) problems.push([t, problem]);
  }
  if (problems.length === 0) return undefined;
  return [
    `missing ${problems.map(([t]) => t.command).join(", ")}: the image build needs`,
    ...problems.map(([t, p]) => `  ${t.command} (${p}): ${t.why}; install: ${t.install}`),
  ].join("\n");
}

/** Time since `start` (a `Date.now()`), as progress lines write it. */
export function elapsed(start: number): string {
  return formatElapsed(Date.now() - start);
}

/** What `run` prints progress to (the test collects it). */
export type Say = (line: string) => void;

/** Options of one external step. */
export interface StepOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** Seconds between "still running" lines (at most 30). */
  tick?: number;
}

let logs = 0;

/**
 * Runs `command args` as the step `label`: its output goes to a log under .cache/image/logs; a
 * line says when it starts, every `tick` seconds that it still runs, and when it ends. Returns the
 * standard output; throws a BuildError with the log's tail when it fails.
 */
export async function step(
  say: Say,
  label: string,
  command: string,
  args: string[],
  o: StepOptions = {},
): Promise<string> {
  await Deno.mkdir(join(CACHE, "logs"), { recursive: true });
  const log = join(CACHE, "logs", `${Date.now()}-${++logs}-${label.replace(/\W+/g, "-")}.log`);
  const start = Date.now();
  return await progressStep(label, say, async () => {
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(command, {
        args,
        cwd: o.cwd ?? ROOT,
        env: o.env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch (e) {
      throw new BuildError(`${label}: cannot run ${command}: ${(e as Error).message}`);
    }
    const [out, err, status] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.status,
    ]);
    await Deno.writeTextFile(log, `$ ${command} ${args.join(" ")}\n${out}\n--- stderr\n${err}`);
    if (!status.success) {
      const tail = `${out}\n${err}`.trim().split("\n").slice(-25).join("\n");
      throw new BuildError(
        `${label} failed (exit ${status.code}) after ${elapsed(start)}: ${command} ${
          args.join(" ")
        }\n${tail}\nfull log: ${log}`,
      );
    }
    return out;
  }, { everyMs: Math.min(o.tick ?? 15, 30) * 1000, done: `${label}: done` });
}
