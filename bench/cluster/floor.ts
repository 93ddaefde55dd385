/**
 * The floor under the operator's idle memory: what `deno run` holds, started as the operator is
 * (its Deno flags and environment), for programs that do nearly nothing. The operator's figure
 * minus a floor is what its own code and data hold.
 */
import { join } from "node:path";
import { OPERATOR_DENO_FLAGS, OPERATOR_ENV, REPO_ROOT } from "../../tools/operator/process.ts";
import type { Report } from "../report.ts";
import { BENCH_DIR } from "./env.ts";

/** One floor program: what it does, and its code (run from the repository, so `zod` resolves). */
export interface Floor {
  name: string;
  code: string;
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
    name: "Deno parsing one object with zod (the operator's validator)",
    code: `import { z } from "zod";
    z.object({ a: z.string() }).parse({ a: "x" });`,
  },
  {
    // The floor files live in .cache/bench/: the operator's entry module, loaded, never run.
    name: "Deno loading the operator's whole module graph and running none of it",
    code: `import "../../src/cli/run.ts";`,
  },
];

/** VmRSS (MB) of a floor program 3 s after it ran, read by the program itself. */
export async function floorRss(floor: Floor, index: number): Promise<number> {
  const file = join(BENCH_DIR, `floor-${index}.ts`);
  await Deno.mkdir(BENCH_DIR, { recursive: true });
  await Deno.writeTextFile(
    file,
    `${floor.code}
    await new Promise((r) => setTimeout(r, 3000));
    const status = await Deno.readTextFile("/proc/self/status");
    console.log(/^VmRSS:\\s+(\\d+) kB/m.exec(status)![1]);
    Deno.exit(0);
`,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--cached-only", ...OPERATOR_DENO_FLAGS, file],
    cwd: REPO_ROOT,
    env: { ...OPERATOR_ENV, NO_COLOR: "1" },
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`floor ${floor.name}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return Number(new TextDecoder().decode(out.stdout).trim()) / 1024;
}

/** Measures every floor into `report` (one row each); the first floor's figure, in MB. */
export async function addFloors(
  report: Pick<Report, "add">,
  section: string,
): Promise<number> {
  const figures: number[] = [];
  for (const [i, floor] of FLOORS.entries()) {
    figures.push(await floorRss(floor, i));
    report.add({
      section,
      name: `floor: ${floor.name}`,
      value: figures[i],
      unit: "MB",
      note: "VmRSS 3 s after it ran, started with the operator's Deno flags and environment",
    });
  }
  return figures[0];
}
