/**
 * Faults injected into a running cluster and its real node, for the fault tests (issue #45): a
 * Pod cut off from the API server by packet filter rules inside the Pod's own network namespace,
 * etcd compacted through its HTTP gateway, a container's memory as its cgroup counts it, and the
 * audit log's writes told apart by the Pod whose ServiceAccount token made them.
 *
 * Network rules go only into a Pod network namespace of this cluster's bridge (found through the
 * bridge's veths), never into the machine's own tables; each {@link Partition} removes its rules
 * on `heal()`, and the namespace goes with its Pod.
 */
import { readAuditEvents } from "./audit.ts";
import { KUBERNETES_SERVICE_IP } from "./services.ts";
import { readState } from "./state.ts";

async function run(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  const o = await new Deno.Command(cmd, { args, stdin: "null" }).output();
  const dec = new TextDecoder();
  return { ok: o.success, out: o.success ? dec.decode(o.stdout) : dec.decode(o.stderr) };
}

async function must(cmd: string, args: string[]): Promise<string> {
  const r = await run(cmd, args);
  if (!r.ok) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.out.trim()}`);
  return r.out;
}

/**
 * The network namespace (its name under /var/run/netns) of the Pod with address `podIp` on
 * `bridge`: one of the namespaces the bridge's veths lead into, the one holding that address.
 */
export async function podNetns(bridge: string, podIp: string): Promise<string> {
  const links = await must("ip", ["-o", "link", "show", "master", bridge]);
  const names = new Set([...links.matchAll(/link-netns (\S+)/g)].map((m) => m[1]));
  for (const ns of names) {
    const addrs = await run("ip", ["-n", ns, "-4", "-o", "addr", "show"]);
    if (addrs.ok && addrs.out.includes(` ${podIp}/`)) return ns;
  }
  throw new Error(`no network namespace on ${bridge} holds ${podIp} (of ${[...names]})`);
}

/** What a partition cuts: every API request, or only some (see {@link partitionPod}). */
export interface PartitionOptions {
  /** Destination address of the API server as the Pod calls it; default the `kubernetes` Service. */
  ip?: string;
  /** Its port; default 443. */
  port?: number;
}

/** Rules in force in one Pod's network namespace; `heal()` removes them (idempotent). */
export interface Partition {
  netns: string;
  /** When the rules went in (epoch ms). */
  since: number;
  /** The iptables rules (without `-I`/`-D` chain) that are in force. */
  rules: string[][];
  heal(): Promise<void>;
}

function iptables(netns: string, args: string[]): Promise<string> {
  return must("ip", ["netns", "exec", netns, "iptables", "-w", "5", ...args]);
}

/**
 * Drops every packet between the Pod of `netns` and the API server (both ways, so neither new
 * requests nor answers to old ones pass), as a network partition would: TCP retransmits, nothing
 * is refused. The Pod's other traffic (the kubelet's probes) still passes.
 */
export async function partitionPod(netns: string, o: PartitionOptions = {}): Promise<Partition> {
  const ip = o.ip ?? KUBERNETES_SERVICE_IP;
  const port = String(o.port ?? 443);
  const rules = [
    ["OUTPUT", "-p", "tcp", "-d", ip, "--dport", port, "-j", "DROP"],
    ["INPUT", "-p", "tcp", "-s", ip, "--sport", port, "-j", "DROP"],
  ];
  const added: string[][] = [];
  const heal = async () => {
    const problems: string[] = [];
    while (added.length > 0) {
      const [chain, ...rest] = added.pop()!;
      await iptables(netns, ["-D", chain, ...rest]).catch((e) => problems.push(String(e)));
    }
    if (problems.length > 0) throw new Error(problems.join("; "));
  };
  try {
    for (const [chain, ...rest] of rules) {
      await iptables(netns, ["-I", chain, "1", ...rest]);
      added.push([chain, ...rest]);
    }
  } catch (e) {
    await heal().catch(() => {});
    throw e;
  }
  return { netns, since: Date.now(), rules, heal };
}

/** The rules `iptables -S` lists in `netns` (to show a partition healed left nothing). */
export async function netnsRules(netns: string): Promise<string[]> {
  return (await iptables(netns, ["-S"])).split("\n").filter((l) => l.startsWith("-A "));
}

/** One write in the audit log, with the Pod whose bound ServiceAccount token made it. */
export interface PodWrite {
  /** `authentication.kubernetes.io/pod-name` of the token; "" when not a Pod's token. */
  pod: string;
  /** When the API server received it (epoch ms). */
  at: number;
  verb: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  code: number;
  /** The request's body where the audit policy records it (RateLimit status writes). */
  body?: unknown;
}

/** The user an audit event names, with the extra fields a bound token adds. */
interface AuditUser {
  username: string;
  extra?: Record<string, string[]>;
}

/**
 * Writes by `user` received at or after `sinceMs`, each with its Pod: a Pod's projected token
 * carries the Pod's name, and the API server puts it into the audit event's `user.extra`, so the
 * log tells two replicas of one ServiceAccount apart.
 */
export async function podWrites(auditLog: string, user: string, sinceMs = 0): Promise<PodWrite[]> {
  const out: PodWrite[] = [];
  for (const ev of await readAuditEvents(auditLog)) {
    const u = ev.user as AuditUser;
    if (u?.username !== user) continue;
    const at = Date.parse(ev.requestReceivedTimestamp);
    if (at < sinceMs) continue;
    out.push({
      pod: u.extra?.["authentication.kubernetes.io/pod-name"]?.[0] ?? "",
      at,
      verb: ev.verb,
      resource: ev.objectRef?.resource ?? "",
      subresource: ev.objectRef?.subresource ?? "",
      namespace: ev.objectRef?.namespace ?? "",
      name: ev.objectRef?.name ?? "",
      code: ev.responseStatus?.code ?? 0,
      ...(ev.requestObject === undefined ? {} : { body: ev.requestObject }),
    });
  }
  return out.sort((a, b) => a.at - b.at);
}

/** etcd's client URL of the cluster in `dir` (loopback, plain HTTP). */
async function etcdUrl(dir: string): Promise<string> {
  const state = await readState(dir);
  if (!state) throw new Error(`no cluster state in ${dir}`);
  return `http://127.0.0.1:${state.ports.etcdClient}`;
}

async function etcdPost(url: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: "POST",
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${url}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/**
 * Compacts etcd's history up to its current revision (physically), as the API server's periodic
 * compaction does, and returns that revision: every resourceVersion before it is gone.
 */
export async function compactEtcd(dir: string): Promise<number> {
  const url = await etcdUrl(dir);
  const range = await etcdPost(`${url}/v3/kv/range`, { key: btoa("/"), limit: 1 });
  const revision = Number((range.header as { revision?: string })?.revision);
  if (!Number.isInteger(revision) || revision <= 0) {
    throw new Error(`etcd gave no revision: ${JSON.stringify(range)}`);
  }
  await etcdPost(`${url}/v3/kv/compaction`, { revision: String(revision), physical: true });
  return revision;
}

/** A container's memory as its cgroup counts it (bytes). */
export interface CgroupMemory {
  usage: number;
  /** The most it used since the cgroup was made. */
  peak: number;
  limit: number;
}

/** The memory cgroup of process `pid` (cgroup v1 or v2), read now. */
export async function cgroupMemory(pid: number): Promise<CgroupMemory> {
  const lines = (await Deno.readTextFile(`/proc/${pid}/cgroup`)).split("\n");
  const v1 = lines.map((l) => l.split(":")).find((f) => f[1]?.split(",").includes("memory"));
  const read = async (file: string) => (await Deno.readTextFile(file)).trim();
  const num = (s: string) => s === "max" ? Infinity : Number(s);
  if (v1) {
    const dir = `/sys/fs/cgroup/memory${v1[2]}`;
    return {
      usage: num(await read(`${dir}/memory.usage_in_bytes`)),
      peak: num(await read(`${dir}/memory.max_usage_in_bytes`)),
      limit: num(await read(`${dir}/memory.limit_in_bytes`)),
    };
  }
  const v2 = lines.find((l) => l.startsWith("0::"));
  if (!v2) throw new Error(`process ${pid} has no memory cgroup: ${lines.join(" ")}`);
  const dir = `/sys/fs/cgroup${v2.slice(3)}`;
  return {
    usage: num(await read(`${dir}/memory.current`)),
    peak: num(await read(`${dir}/memory.peak`)),
    limit: num(await read(`${dir}/memory.max`)),
  };
}

/** Counts of what a {@link WatchStallProxy} passed on. */
export interface ProxyCounts {
  requests: number;
  watches: number;
  /** Watch streams made silent by a stall (they stay silent: their data is lost). */
  stalledWatches: number;
}

/**
 * A proxy between one Pod and the API server that can drop the watch streams (long-running
 * requests) while every short request passes: a middlebox that loses long-lived streams. It
 * terminates TLS with the API server's own serving certificate (valid for the `kubernetes`
 * Service's address, signed by the cluster CA the Pod trusts), listens on the bridge's host
 * address, and passes each request on, with its credentials, to the API server. While stalled,
 * every open watch and every new one answers its headers and then nothing: its events are
 * dropped, and a stream that lost one stays silent even after `heal()`, as a lost stream would.
 */
export class WatchStallProxy {
  readonly counts: ProxyCounts = { requests: 0, watches: 0, stalledWatches: 0 };
  #stalled = false;
  readonly #open = new Set<{ dead: boolean }>();
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #client: Deno.HttpClient;
  readonly #routes: { netns: string; rules: string[][] }[] = [];

  private constructor(
    readonly hostIp: string,
    upstream: string,
    ca: string,
    cert: { cert: string; key: string },
  ) {
    this.#client = Deno.createHttpClient({ caCerts: [ca] });
    this.#server = Deno.serve({
      hostname: hostIp,
      port: 0,
      ...cert,
      onListen: () => {},
    }, (req) => this.#handle(req, upstream));
  }

  /** Starts a proxy on `hostIp` (the bridge's) for the cluster in `dir`. */
  static async start(dir: string, hostIp: string): Promise<WatchStallProxy> {
    const state = await readState(dir);
    if (!state) throw new Error(`no cluster state in ${dir}`);
    const read = (n: string) => Deno.readTextFile(`${dir}/pki/${n}`);
    return new WatchStallProxy(hostIp, state.server, await read("ca.crt"), {
      cert: await read("serving.crt"),
      key: await read("serving.key"),
    });
  }

  /** The port it listens on. */
  get port(): number {
    return this.#server.addr.port;
  }

  /**
   * Sends the API traffic of the Pod in `netns` through this proxy: new connections to the
   * `kubernetes` Service are translated to it, and the Pod's connections already open are reset
   * (they reconnect through it). `unroute()` takes the rules out again.
   */
  async route(netns: string): Promise<void> {
    const dst = ["-p", "tcp", "-d", KUBERNETES_SERVICE_IP, "--dport", "443"];
    const rules = [
      [
        "-t",
        "nat",
        "OUTPUT",
        ...dst,
        "-j",
        "DNAT",
        "--to-destination",
        `${this.hostIp}:${this.port}`,
      ],
      ["-t", "filter", "OUTPUT", ...dst, "-j", "REJECT", "--reject-with", "tcp-reset"],
    ];
    const route = { netns, rules: [] as string[][] };
    this.#routes.push(route);
    for (const [t, table, chain, ...rest] of rules) {
      await iptables(netns, [t, table, "-I", chain, "1", ...rest]);
      route.rules.push([t, table, chain, ...rest]);
    }
  }

  /** Removes the routing rules (connections made through the proxy go on through it). */
  async unroute(): Promise<void> {
    const problems: string[] = [];
    for (const r of this.#routes.splice(0)) {
      for (const [t, table, chain, ...rest] of r.rules.reverse()) {
        await iptables(r.netns, [t, table, "-D", chain, ...rest]).catch((e) =>
          problems.push(String(e))
        );
      }
    }
    if (problems.length > 0) throw new Error(problems.join("; "));
  }

  /** From now on, watch streams carry nothing (short requests still pass). */
  stall(): void {
    this.#stalled = true;
    for (const s of this.#open) {
      if (!s.dead) this.counts.stalledWatches++;
      s.dead = true;
    }
  }

  /** New watch streams pass again; those that lost data stay silent. */
  heal(): void {
    this.#stalled = false;
  }

  /** Stops listening, ends every stream and takes the routing rules out. */
  async close(): Promise<void> {
    await this.unroute().finally(async () => {
      await this.#server.shutdown().catch(() => {});
      this.#client.close();
    });
  }

  async #handle(req: Request, upstream: string): Promise<Response> {
    const url = new URL(req.url);
    const watch = url.searchParams.get("watch") === "true" || url.pathname.includes("/watch/");
    this.counts.requests++;
    const headers = new Headers(req.headers);
    headers.delete("host");
    const body = req.method === "GET" || req.method === "HEAD"
      ? undefined
      : new Uint8Array(await req.arrayBuffer());
    let res: Response;
    try {
      res = await fetch(`${upstream}${url.pathname}${url.search}`, {
        method: req.method,
        headers,
        body,
        client: this.#client,
        signal: req.signal,
      });
    } catch (e) {
      return new Response(String(e), { status: 502 });
    }
    if (!watch || !res.body) {
      return new Response(res.body, { status: res.status, headers: res.headers });
    }
    this.counts.watches++;
    const stream = { dead: this.#stalled };
    if (stream.dead) this.counts.stalledWatches++;
    this.#open.add(stream);
    const open = this.#open;
    const gated = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, ctl) {
          if (!stream.dead) ctl.enqueue(chunk);
        },
        flush() {
          open.delete(stream);
        },
      }),
    );
    // A dead stream also never ends: the client must notice on its own.
    const held = gated.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        flush: () => stream.dead ? new Promise<void>(() => {}) : undefined,
      }),
    );
    req.signal.addEventListener("abort", () => open.delete(stream), { once: true });
    return new Response(held, { status: res.status, headers: res.headers });
  }
}
