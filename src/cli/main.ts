/**
 * The CLI front door: `deno run -A mod.ts <command> [args]`. Each command is a module loaded only
 * when it runs, exporting `main(args): Promise<number>` (the exit code).
 */
import { didYouMean } from "../api/suggest.ts";
import { CONSOLE, failUsage, type Output, usageLine } from "./usage.ts";
import { versionLine } from "./version.ts";

/** What a command module exports. */
export interface CommandModule {
  /** Runs the command with the arguments after its name; resolves to the process exit code. */
  main(args: string[]): Promise<number>;
}

/** A subcommand: its name, a one-line summary for `--help`, and how to load it. */
export interface Command {
  name: string;
  summary: string;
  load: () => Promise<CommandModule>;
}

/** Every subcommand, in the order `--help` lists them. To add one, add a row. */
export const COMMANDS: readonly Command[] = [
  {
    name: "crds",
    summary: "write crds/ from the schemas in src/api/ (--check: exit 1 if crds/ is stale)",
    load: () => import("./crds.ts"),
  },
  {
    name: "ratelimit",
    summary: "show what a RateLimit does to some traffic, before applying it (see --help)",
    load: () => import("./ratelimit/mod.ts"),
  },
  {
    name: "run",
    summary: "run the operator on the kubeconfig's cluster or in-cluster (run --help: flags)",
    load: () => import("./run.ts"),
  },
  {
    name: "sim",
    summary: "simulate the operator on virtual time: scenarios and a fault sweep (see --help)",
    load: () => import("./sim.ts"),
  },
  {
    name: "deploy",
    summary: "write the generated files of deploy/: RBAC and CRD copies (--check: exit 1 if stale)",
    load: () => import("./deploy.ts"),
  },
];

/** `help`, `--help` or `-h`: asking for help, wherever it stands. */
function isHelp(arg: string): boolean {
  return arg === "--help" || arg === "-h" || arg === "help";
}

/** How the front door is named in its usage line and hints. */
const PROGRAM = "mod.ts";

/** The help text listing the subcommands. */
export function usage(commands: readonly Command[] = COMMANDS): string {
  const width = Math.max(...commands.map((c) => c.name.length), "help".length);
  const rows = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return [
    "Platform operator: Serverless, Scaler and RateLimit.",
    "",
    usageLine(PROGRAM, "<command> [options]"),
    "",
    "Run it as `./deno run -A mod.ts`; `./deno task <command>` runs crds, deploy, sim and ratelimit",
    "this way too, and `./deno task start` runs `run`.",
    "",
    "Commands:",
    ...rows,
    `  ${"help".padEnd(width)}  show this help, or a command's (help <command>)`,
    "",
    "Options:",
    "  -h, --help  show this help",
    "  --version   print the version",
    "",
    "Run `mod.ts <command> --help` for a command's options. Results go to stdout, errors to stderr;",
    "exit status 2 is a usage error.",
  ].join("\n");
}

/** Refuses an argument the front door does not take (`why` says what it takes), exit 2. */
function unexpected(output: Output, arg: string, why: string): number {
  return failUsage(output, PROGRAM, `unexpected argument ${JSON.stringify(arg)}: ${why}`);
}

/**
 * Dispatches `args` to a command and resolves to the exit code: 0 for help and `--version`, 2 for
 * no or an unknown command or an argument they do not take (`--version` takes none, `help` one
 * command), otherwise the command's own.
 */
export async function main(
  args: readonly string[],
  commands: readonly Command[] = COMMANDS,
  output: Output = CONSOLE,
): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined) return failUsage(output, PROGRAM, "no command given");
  if (name === "--version") {
    if (rest.length > 0) return unexpected(output, rest[0], "--version takes none");
    output.out(versionLine());
    return 0;
  }
  if (isHelp(name)) {
    // `help`, `help --help`, `-h -h`: this help. `help <command>`: the command's own.
    const [topic, extra] = rest.filter((a) => !isHelp(a));
    if (topic === undefined) {
      output.out(usage(commands));
      return 0;
    }
    if (!commands.some((c) => c.name === topic)) {
      const names = commands.map((c) => c.name);
      return failUsage(
        output,
        PROGRAM,
        `no help on ${JSON.stringify(topic)}: not a command${didYouMean(topic, names)}`,
      );
    }
    if (extra !== undefined) return unexpected(output, extra, "help takes one command");
    return main([topic, "--help"], commands, output);
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    const names = [...commands.map((c) => c.name), "help"];
    const what = name.startsWith("-") ? "flag" : "command";
    const guess = didYouMean(name, what === "flag" ? ["--help", "--version"] : names);
    return failUsage(output, PROGRAM, `unknown ${what} ${JSON.stringify(name)}${guess}`);
  }
  const module = await command.load();
  return module.main(rest);
}
