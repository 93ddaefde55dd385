/**
 * A client of the simulated API server: the `Cluster` port for one process (an operator replica,
 * the user's kubectl). Each request travels with a latency drawn from the PRNG, may be answered by
 * an injected fault, and is executed atomically by the store; writes go to the write log. Killing a
 * client (a crashed process) freezes it: nothing it sent later arrives, no answer ever comes back.
 */
import { readCopy } from "./json.ts";
import {
  ApiError,
  type ApplyOptions,
  asPartialMetadata,
  type Cluster,
  type DeleteOptions,
  type ListOptions,
  type ListPage,
  type WatchEvent,
  type WatchOptions,
  type WriteOptions,
} from "../../src/runtime/mod.ts";
import type { JsonPatchOp, KubeObject, ResourceType } from "../../src/api/object.ts";
import type { ClockView } from "../clock.ts";
import type { Prng } from "../prng.ts";
import type { WriteVerb } from "./history.ts";
import type { Latency, OpenWatch, RequestVerb, ServerHandle } from "./requests.ts";
import type { Actor, WriteResult } from "./store.ts";
import { WatchStream } from "./watch.ts";

export type {
  FaultSource,
  Latency,
  OpenWatch,
  RequestFault,
  RequestListener,
  RequestVerb,
  ServerHandle,
  WatchFault,
} from "./requests.ts";

/** The `Cluster` port of one simulated process. */
export class SimClient implements Cluster {
  readonly #server: ServerHandle;
  readonly #actor: Actor;
  readonly #clock: ClockView;
  readonly #latency: Latency;
  readonly #prng: Prng;

  constructor(server: ServerHandle, actor: Actor, clock: ClockView, prng: Prng, latency?: Latency) {
    this.#server = server;
    this.#actor = actor;
    this.#clock = clock;
    this.#prng = prng;
    this.#latency = latency ?? (() => prng.logUniform(1, 40));
  }

  /** The actor name this client writes as. */
  get actor(): string {
    return this.#actor.name;
  }

  /** Freezes the client forever (the process crashed). */
  kill(): void {
    this.#clock.kill();
  }

  list(type: ResourceType, opts: ListOptions = {}): Promise<ListPage> {
    return this.#call(
      "list",
      type,
      opts.namespace,
      undefined,
      () => {
        const page = this.#server.lister.list(type, opts);
        return opts.metadataOnly ? { ...page, items: page.items.map(asPartialMetadata) } : page;
      },
    );
  }

  get(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
  ): Promise<KubeObject | undefined> {
    return this.#call("get", type, namespace, name, () => {
      const t = this.#server.store.types.resolve(type);
      return this.#server.store.get(t, namespace, name);
    });
  }

  create(type: ResourceType, obj: KubeObject, opts?: WriteOptions): Promise<KubeObject> {
    return this.#write(
      "create",
      type,
      obj.metadata?.namespace,
      obj.metadata?.name,
      () => this.#server.store.create(type, obj, this.#actor),
      opts,
    );
  }

  update(type: ResourceType, obj: KubeObject, opts?: WriteOptions): Promise<KubeObject> {
    return this.#write(
      "update",
      type,
      obj.metadata?.namespace,
      obj.metadata?.name,
      () => this.#server.store.update(type, obj, this.#actor),
      opts,
    );
  }

  apply(type: ResourceType, obj: KubeObject, opts: ApplyOptions): Promise<KubeObject> {
    const actor = { name: this.#actor.name, manager: opts.fieldManager };
    return this.#write(
      "apply",
      type,
      obj.metadata?.namespace,
      obj.metadata?.name,
      () => this.#server.store.apply(type, obj, actor, !!opts.force),
      opts,
    );
  }

  applyStatus(type: ResourceType, obj: KubeObject, opts: ApplyOptions): Promise<KubeObject> {
    const actor = { name: this.#actor.name, manager: opts.fieldManager };
    return this.#write(
      "applyStatus",
      type,
      obj.metadata?.namespace,
      obj.metadata?.name,
      () => this.#server.store.apply(type, obj, actor, !!opts.force, "status"),
      opts,
    );
  }

  patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    ops: JsonPatchOp[],
    opts?: WriteOptions,
  ): Promise<KubeObject> {
    return this.#write(
      "patch",
      type,
      namespace,
      name,
      () => this.#server.store.patch(type, namespace, name, ops, this.#actor),
      opts,
    );
  }

  async delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<boolean> {
    try {
      await this.#write(
        "delete",
        type,
        namespace,
        name,
        () => this.#server.store.delete(type, namespace, name, opts, this.#actor),
        opts,
      );
      return true;
    } catch (err) {
      if (err instanceof ApiError && err.code === 404) return false;
      throw err;
    }
  }

  async *watch(
    type: ResourceType,
    opts: WatchOptions,
    signal: AbortSignal,
  ): AsyncIterable<WatchEvent> {
    const server = this.#server;
    const stream = await this.#call("watch", type, opts.namespace, undefined, () => {
      const t = server.store.types.resolve(type);
      const timeoutMs = opts.timeoutSeconds !== undefined
        ? opts.timeoutSeconds * 1000
        : this.#prng.int(1800, 3600) * 1000;
      const s = new WatchStream(server.store, t, opts, this.#clock, {
        latencyMs: this.#latency("watch"),
        timeoutMs,
        goneAs: server.faults?.goneAs() ?? "event",
      });
      s.open();
      return s;
    }, false);
    const fault = server.faults?.watch(this.#actor.name, type);
    if (fault) {
      this.#clock.sleep(fault.afterMs, signal).then(() => {
        if (fault.kind === "drop") stream.end();
        else if (fault.kind === "stall") stream.stall();
        else {stream.failWith(
            new ApiError(410, "Expired", "The resourceVersion for the provided watch is too old."),
          );}
      }, () => {});
    }
    const open: OpenWatch = { actor: this.#actor.name, type, stream };
    server.watches?.add(open);
    try {
      if (!opts.metadataOnly) yield* stream.events(signal);
      else {
        for await (const ev of stream.events(signal)) {
          yield ev.type === "BOOKMARK" || ev.type === "ERROR"
            ? ev
            : { ...ev, object: asPartialMetadata(ev.object) };
        }
      }
    } finally {
      server.watches?.delete(open);
    }
  }

  /**
   * Waits `ms` of the client's clock. A client without latency (unit tests drive the runtime on a
   * manual clock) is answered at once, as a promise; a killed client never is.
   */
  #pause(ms: number): Promise<void> {
    return ms > 0 || this.#clock.dead ? this.#clock.sleep(ms) : Promise.resolve();
  }

  async #write(
    verb: WriteVerb,
    type: ResourceType,
    namespace: string | undefined,
    name: string | undefined,
    op: () => WriteResult,
    opts: WriteOptions | undefined,
  ): Promise<KubeObject> {
    return (await this.#call(verb, type, namespace, name, op, true, opts?.timeoutMs)).obj;
  }

  async #call<T>(
    verb: RequestVerb,
    type: ResourceType,
    namespace: string | undefined,
    name: string | undefined,
    op: () => T,
    copy = true,
    timeoutMs?: number,
  ): Promise<T> {
    const { log, faults, store } = this.#server;
    this.#server.onRequest?.(this.#actor.name, verb, type, namespace, name);
    await this.#pause(this.#latency(verb));
    const received = this.#clock.now();
    const isWrite = verb !== "get" && verb !== "list" && verb !== "watch";
    const record = (outcome: "changed" | "unchanged" | number, rv?: string) => {
      if (isWrite) {
        log.add({
          at: this.#clock.now(),
          actor: this.#actor.name,
          verb: verb as WriteVerb,
          kind: type.kind,
          namespace,
          name: name ?? "",
          outcome,
          rv,
        });
      } else log.read(this.#actor.name);
    };
    const fault = faults?.request(this.#actor.name, verb, type, namespace, name);
    if (fault?.kind === "error") {
      record(fault.error.code);
      throw fault.error;
    }
    if (fault?.kind === "slow") {
      await this.#clock.sleep(fault.delayMs);
      // The API server's `timeout`: a request still waiting past it is given up, nothing written.
      if (timeoutMs !== undefined && this.#clock.now() - received > timeoutMs) {
        record(504);
        await this.#pause(this.#latency(verb));
        throw new ApiError(
          504,
          "Timeout",
          `${verb} ${type.plural}${
            name ? ` ${name}` : ""
          }: the server gave up after ${timeoutMs} ms`,
        );
      }
    }
    let result: T | undefined;
    let error: unknown;
    if (fault?.kind !== "timeout" || fault.executed) {
      try {
        result = op();
        const w = result as unknown as Partial<WriteResult>;
        record(
          w?.changed === false ? "unchanged" : "changed",
          w?.obj?.metadata?.resourceVersion ?? String(store.rv),
        );
      } catch (err) {
        error = err;
        record(err instanceof ApiError ? err.code : 500);
      }
    }
    if (fault?.kind === "timeout") {
      if (!fault.executed) record(0);
      await this.#clock.sleep(fault.afterMs);
      throw new ApiError(
        0,
        "Timeout",
        `${verb} ${type.plural}${name ? ` ${name}` : ""}: request timed out (no answer)`,
      );
    }
    await this.#pause(this.#latency(verb));
    if (error !== undefined) throw error;
    return copy ? readCopy(result as T) : result as T;
  }
}
