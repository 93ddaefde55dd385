/**
 * A real Prometheus (the binary tools/prometheus/build.ts builds) scraping static targets on
 * loopback and evaluating the rule groups it is given, for the e2e test of the alerts and the
 * dashboard. When it cannot start — a missing binary, a bad flag, a taken port, a bad config — the
 * error says what to fix and quotes Prometheus's own log: a failure, never a skip.
 *
 * @module
 */
import { join } from "node:path";
import { stringify } from "yaml";
import { freePort, isAlive } from "../processes.ts";

/** How to run one Prometheus. */
export interface PrometheusOptions {
  /** The `prometheus` binary (ensurePrometheus() gives the built one). */
  binary: string;
  /** Directory for its config, rules, TSDB and log (created). */
  dir: string;
  /** The scrape job's name: the `job` label the rules and the dashboard select. */
  job: string;
  /** Targets of that job (`host:port`, plain HTTP). */
  targets: string[];
  /** A rule file's content (`{groups: [...]}`). */
  rules: unknown;
  /** Scrape and rule evaluation interval (default `1s`). */
  interval?: string;
  /** `--web.listen-address` (default: a free loopback port). */
  listen?: string;
  /** More flags, appended as given. */
  extraArgs?: string[];
  /** How long to wait for `/-/ready` (default 30 s). */
  readyTimeoutMs?: number;
}

/** One result of an instant query: a series' labels and value. */
export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/** One alert of `/api/v1/alerts`. */
export interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: "pending" | "firing";
  activeAt: string;
}

const BUILD_HINT = "build it with ./deno task build --only=prometheus (needs Go)";

async function logTail(path: string, lines = 15): Promise<string> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/** A running Prometheus. */
export class Prometheus {
  private constructor(
    /** `http://host:port`. */
    readonly url: string,
    readonly logPath: string,
    private readonly child: Deno.ChildProcess,
    private readonly logged: Promise<void>,
  ) {}

  /** Starts it and waits until `/-/ready` answers 200; throws what to fix when it cannot. */
  static async start(o: PrometheusOptions): Promise<Prometheus> {
    const stat = await Deno.stat(o.binary).catch(() => undefined);
    if (!stat?.isFile) throw new Error(`prometheus: no binary at ${o.binary}: ${BUILD_HINT}`);
    await Deno.mkdir(join(o.dir, "data"), { recursive: true });
    const interval = o.interval ?? "1s";
    const rulesPath = join(o.dir, "rules.yaml");
    const configPath = join(o.dir, "prometheus.yaml");
    await Deno.writeTextFile(rulesPath, stringify(o.rules));
    await Deno.writeTextFile(
      configPath,
      stringify({
        global: {
          scrape_interval: interval,
          scrape_timeout: interval,
          evaluation_interval: interval,
        },
        rule_files: [rulesPath],
        // honor_labels as the ServiceMonitor: a RateLimit's `namespace` label stays its own.
        scrape_configs: [{
          job_name: o.job,
          honor_labels: true,
          static_configs: [{ targets: o.targets }],
        }],
      }),
    );
    const listen = o.listen ?? `127.0.0.1:${freePort()}`;
    const logPath = join(o.dir, "prometheus.log");
    const log = await Deno.open(logPath, { create: true, write: true, truncate: true });
    const child = new Deno.Command(o.binary, {
      args: [
        `--config.file=${configPath}`,
        `--storage.tsdb.path=${join(o.dir, "data")}`,
        `--web.listen-address=${listen}`,
        ...(o.extraArgs ?? []),
      ],
      stdin: "null",
      stdout: "null",
      // Prometheus logs to stderr.
      stderr: "piped",
    }).spawn();
    const logged = child.stderr.pipeTo(log.writable).catch(() => {});
    const p = new Prometheus(`http://${listen}`, logPath, child, logged);
    await p.#waitReady(o.readyTimeoutMs ?? 30_000, listen);
    return p;
  }

  async #waitReady(timeoutMs: number, listen: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!isAlive(this.child.pid)) {
        const { code } = await this.child.status;
        await this.logged;
        const tail = await logTail(this.logPath);
        const taken = /address already in use/.test(tail)
          ? ` ${listen} is taken: stop what listens there or give another listen address.`
          : "";
        throw new Error(
          `prometheus exited with code ${code} before it was ready at ${this.url}.${taken} ` +
            `Its log (${this.logPath}) ends:\n${tail}`,
        );
      }
      try {
        const res = await fetch(`${this.url}/-/ready`, { signal: AbortSignal.timeout(1000) });
        await res.body?.cancel();
        if (res.ok) return;
      } catch {
        // Not listening yet.
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    await this.stop();
    throw new Error(
      `prometheus not ready at ${this.url}/-/ready after ${timeoutMs} ms; its log (${this.logPath}) ends:\n${await logTail(
        this.logPath,
      )}`,
    );
  }

  async #api<T>(path: string): Promise<T> {
    const res = await fetch(`${this.url}${path}`, { signal: AbortSignal.timeout(10_000) });
    const body = await res.json() as { status: string; data: T; error?: string };
    if (body.status !== "success") {
      throw new Error(`prometheus ${path}: ${res.status} ${body.error ?? JSON.stringify(body)}`);
    }
    return body.data;
  }

  /** An instant query's vector; throws with Prometheus's error for an invalid query. */
  async query(expr: string): Promise<Sample[]> {
    const data = await this.#api<{ resultType: string; result: Sample[] }>(
      `/api/v1/query?query=${encodeURIComponent(expr)}`,
    );
    if (data.resultType !== "vector") throw new Error(`${expr}: a ${data.resultType}, no vector`);
    return data.result;
  }

  /** The pending and firing alerts. */
  async alerts(): Promise<Alert[]> {
    return (await this.#api<{ alerts: Alert[] }>("/api/v1/alerts")).alerts;
  }

  /** SIGTERM, then SIGKILL after 10 s; resolves once it is gone. */
  async stop(): Promise<void> {
    const kill = (s: Deno.Signal) => {
      try {
        this.child.kill(s);
      } catch {
        // Already gone.
      }
    };
    kill("SIGTERM");
    const timer = setTimeout(() => kill("SIGKILL"), 10_000);
    await this.child.status;
    clearTimeout(timer);
    await this.logged;
  }
}
