/**
 * Records every status the served kinds show on the real cluster, from `kubectl get -w` (one watch
 * per kind), so a scenario's `seen: true` expectations can be checked as the simulator checks
 * them: against every status an object had, not only the current one.
 */
import type { ClusterHandle } from "../../tools/cluster/mod.ts";
import type { StatusView } from "./status.ts";

/** One watch event of a served object. */
export interface StatusEvent {
  /** Position in the recording (monotonic). */
  seq: number;
  type: string;
  /** `Kind namespace/name`, as the simulator's timeline names objects. */
  object: string;
  status?: StatusView;
}

const SEP = "|";
const TEMPLATE = [
  "{.type}",
  "{.object.kind}",
  "{.object.metadata.namespace}",
  "{.object.metadata.name}",
  "{.object.status}",
]
  .join(`{"${SEP}"}`) + `{"\\n"}`;

/** Watches the given resources with the real kubectl and keeps every event. */
export class StatusRecorder {
  readonly events: StatusEvent[] = [];
  readonly #children: Deno.ChildProcess[] = [];
  #seq = 0;

  constructor(readonly cluster: ClusterHandle, readonly resources: string[]) {}

  /** Starts one `kubectl get <resource> -A -w` per resource. */
  start(): void {
    for (const r of this.resources) {
      const child = new Deno.Command(this.cluster.kubectlPath, {
        args: [
          `--kubeconfig=${this.cluster.kubeconfig}`,
          "get",
          r,
          "-A",
          "-w",
          "--output-watch-events",
          "-o",
          `jsonpath=${TEMPLATE}`,
        ],
        stdin: "null",
        stdout: "piped",
        stderr: "null",
      }).spawn();
      this.#children.push(child);
      this.#read(child.stdout).catch(() => {});
    }
  }

  async #read(stream: ReadableStream<Uint8Array>): Promise<void> {
    let buf = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        this.#line(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
    }
  }

  #line(line: string): void {
    const parts = line.split(SEP);
    if (parts.length < 5) return;
    const [type, kind, ns, name] = parts;
    const raw = parts.slice(4).join(SEP).trim();
    let status: StatusView | undefined;
    try {
      status = raw ? JSON.parse(raw) as StatusView : undefined;
    } catch {
      status = undefined;
    }
    this.events.push({
      seq: this.#seq++,
      type: type.trim(),
      object: `${kind.trim()} ${ns.trim()}/${name.trim()}`,
      status,
    });
  }

  /** A mark: events recorded after it are `since(mark)`. */
  mark(): number {
    return this.#seq;
  }

  /** Statuses `object` showed after `mark` (deletions excluded), oldest first. */
  statuses(object: string, mark: number): StatusView[] {
    return this.events.filter((e) =>
      e.seq >= mark && e.object === object && e.type !== "DELETED" && e.status
    )
      .map((e) => e.status!);
  }

  /** Stops the watches. */
  async stop(): Promise<void> {
    for (const c of this.#children) {
      try {
        c.kill("SIGTERM");
      } catch {
        // already gone
      }
    }
    await Promise.all(this.#children.map((c) => c.status));
  }
}
