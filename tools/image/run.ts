/**
 * Running the image build's external tools: each one checked before anything starts (a missing
 * tool names the package that provides it), each long step announced with a line at least every
 * 15 s while it runs, its output kept in a log whose tail a failure shows.
 */
import { join } from "node:path";
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

/** Whether `command` runs (found on PATH and answers `probe`). */
async function runs(command: string, probe: string[]): Promise<boolean> {
  try {
    const out = await new Deno.Command(command, { args: probe, stdout: "null", stderr: "null" })
      .output();
    return out.success;
  } catch {
    return false;
  }
}

/** The tools of `tools` that are missing, as one message; undefined when all are there. */
export async function missingTools(
  tools: readonly Tool[] = TOOLS,
  path?: string,
): Promise<string | undefined> {
  const missing: Tool[] = [];
  for (const t of tools) {
    const found = path === undefined
      ? await runs(t.command, t.probe)
      : await runs(join(path, t.command), t.probe);
    if (!found) missing.push(t);
  }
  if (missing.length === 0) return undefined;
  return [
    `missing ${missing.map((t) => t.command).join(", ")}: the image build needs`,
    ...missing.map((t) => `  ${t.command}: ${t.why}; install: ${t.install}`),
  ].join("\n");
}

/** Seconds since `start`, as a short string. */
export function elapsed(start: number): string {
  const s = Math.round((Date.now() - start) / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
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
  say(`==> ${label}`);
  const timer = setInterval(
    () => say(`    … ${label}: ${elapsed(start)}`),
    Math.min(o.tick ?? 15, 30) * 1000,
  );
  try {
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
    say(`    ${label}: done in ${elapsed(start)}`);
    return out;
  } finally {
    clearInterval(timer);
  }
}
