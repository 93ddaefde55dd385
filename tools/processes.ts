/** Starting, probing and stopping detached background processes by pid. */
import { tailFile } from "./files.ts";

/**
 * The lowest port of the kernel's ephemeral range (the ports `connect` and `bind(0)` hand out),
 * from /proc, else Linux's default.
 */
function ephemeralLow(): number {
  try {
    const low = Number(
      Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").split(/\s+/)[0],
    );
    if (Number.isInteger(low) && low > 21_000) return low;
  } catch { /* not Linux, or no /proc */ }
  return 32_768;
}

const handedOut = new Set<number>();

/** How long a port handed out by any process on the machine is not handed out again. */
const CLAIM_MS = 10 * 60_000;

/** Where processes on this machine note the ports they handed out: one empty file a port. */
function claimsDir(): string {
  return `${Deno.env.get("TMPDIR") || "/tmp"}/platform-operator-ports`;
}

/**
 * Claims `port` for this process among all processes on the machine (test lanes, the CLIs they
 * run, other clones): true when no claim younger than {@link CLAIM_MS} stood. A port is probed
 * free, then bound seconds later by the process it is given to (istiod binds its xDS port some
 * 10 s after start), so a probe alone let two lanes hand out the same port in that window
 * ("bind: address already in use" in CI). Without a writable claims directory, the probe alone.
 */
export function claimPort(port: number, now = Date.now()): boolean {
  const dir = claimsDir();
  const path = `${dir}/${port}`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      Deno.openSync(path, { write: true, createNew: true }).close();
      return true;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        try {
          Deno.mkdirSync(dir, { recursive: true });
        } catch {
          return true;
        }
        continue;
      }
      if (!(e instanceof Deno.errors.AlreadyExists)) return true;
    }
    let mtime: number;
    try {
      mtime = Deno.statSync(path).mtime?.getTime() ?? now;
    } catch {
      continue; // removed in between: try again
    }
    if (now - mtime < CLAIM_MS) return false;
    // A stale claim: renew it. Two processes renewing it at once is as rare as the port's
    // probe racing a bind, and the later one's write does not undo the earlier one's.
    try {
      Deno.utimeSync(path, new Date(now), new Date(now));
      return true;
    } catch {
      continue;
    }
  }
  return false;
}

/**
 * A free TCP port on 127.0.0.1 (closed again; the caller binds it shortly after). It is picked at
 * random below the ephemeral range, from 20000 up (above the fixed ports of
 * Kubernetes, Istio and Envoy, 10250 to 15090): a port the kernel chose for `bind(0)` can be
 * taken by any process's outgoing connection before the caller binds it, which made a test's
 * kube-scheduler fail with "address already in use" while other test processes ran beside it.
 * A port is handed out once per process, and by one process on the machine in ten minutes
 * (see {@link claimPort}).
 */
export function freePort(): number {
  const low = 20_000, high = ephemeralLow();
  for (let i = 0; i < 200; i++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port)) continue;
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
    } catch {
      continue;
    }
    if (!claimPort(port)) continue;
    handedOut.add(port);
    return port;
  }
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** `count` distinct free loopback ports. */
export function freePorts(count: number): number[] {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(freePort());
  return [...ports];
}

/** True when the pid exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** argv[0] of a running process, or null. */
export function executableOf(pid: number): string | null {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0")[0] || null;
  } catch {
    return null;
  }
}

/** What is needed to (re)start one component. */
export interface ProcessSpec {
  name: string;
  bin: string;
  args: string[];
  log: string;
  env?: Record<string, string>;
}

/**
 * Starts `spec` in its own session (it outlives the caller), appending stdout+stderr to
 * `spec.log`; returns its pid.
 */
export async function startProcess(spec: ProcessSpec): Promise<number> {
  const script = 'setsid "$@" >>"$CLUSTER_LOG" 2>&1 </dev/null & echo $!';
  const out = await new Deno.Command("/bin/sh", {
    args: ["-c", script, "sh", spec.bin, ...spec.args],
    env: { ...spec.env, CLUSTER_LOG: spec.log },
    stdin: "null",
  }).output();
  const pid = Number(new TextDecoder().decode(out.stdout).trim());
  if (!out.success || !Number.isInteger(pid) || pid <= 0) {
    throw new Error(`could not start ${spec.name}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return pid;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Stops `pid` with SIGTERM, then SIGKILL after `graceMs`. Only signals the pid if it still
 * runs `bin` (so a recycled pid is never touched). Returns true once it is gone.
 */
export async function stopProcess(pid: number, bin: string, graceMs = 10_000): Promise<boolean> {
  if (!isAlive(pid)) return true;
  if (executableOf(pid) !== bin) return true;
  try {
    Deno.kill(pid, "SIGTERM");
  } catch {
    return !isAlive(pid);
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await sleep(100);
  }
  try {
    Deno.kill(pid, "SIGKILL");
  } catch { /* already gone */ }
  for (let i = 0; i < 50 && isAlive(pid); i++) await sleep(100);
  return !isAlive(pid);
}

/** Options of {@link waitHealthy}. */
export interface HealthWait {
  name: string;
  url: string;
  pid: number;
  log: string;
  client?: Deno.HttpClient;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/** One health probe: true when `url` answers 200. */
export async function probe(
  url: string,
  client?: Deno.HttpClient,
  headers?: Record<string, string>,
): Promise<boolean> {
  try {
    const res = await fetch(url, { client, headers, signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** Polls `url` until it answers 200; fails early (with the log tail) if the process dies. */
export async function waitHealthy(w: HealthWait): Promise<void> {
  const deadline = Date.now() + (w.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (await probe(w.url, w.client, w.headers)) return;
    if (!isAlive(w.pid)) {
      throw new Error(
        `${w.name} (pid ${w.pid}) exited; last log lines of ${w.log}:\n` +
          await tailFile(w.log),
      );
    }
    await sleep(200);
  }
  throw new Error(
    `${w.name} not healthy at ${w.url} after ${w.timeoutMs ?? 60_000}ms; ` +
      `last log lines of ${w.log}:\n${await tailFile(w.log)}`,
  );
}
