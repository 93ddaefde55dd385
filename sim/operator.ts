/**
 * The operator as a process in the simulated cluster: the real runtime (`Manager`) with the real
 * controllers, on its own view of the virtual clock and its own API client. A crash aborts the
 * Manager and freezes the process (its timers and requests never complete, as in a killed
 * container); a restart starts a fresh Manager with a new identity and empty caches, which must
 * win the Lease before it writes.
 */
import { DEFAULT_IMAGES } from "../src/reconcile/images.ts";
import { ALL_CONTROLLERS } from "../src/controllers/registry.ts";
import { FIELD_MANAGER } from "../src/reconcile/labels.ts";
import type { ControllerSpec } from "../src/runtime/controller_spec.ts";
import { type Logger, nullLogger } from "../src/runtime/log.ts";
import { Manager } from "../src/runtime/manager.ts";
import type { SimClient, SimCluster } from "./cluster/mod.ts";
import type { Prng } from "./prng.ts";

/** Where the operator runs and the name of its Lease. */
export const OPERATOR_NAMESPACE = "platform-system";
/** Name of the leader-election Lease. */
export const LEASE_NAME = "platform-operator";

/** Options of the simulated operator. */
export interface OperatorOptions {
  cluster: SimCluster;
  prng: Prng;
  controllers?: readonly ControllerSpec[];
  /** Run leader election on a Lease (default true, as deployed). */
  leaderElection?: boolean;
  log?: Logger;
  /** Called when a Manager's `start()` rejects: a bug in the runtime. */
  onError?: (err: unknown) => void;
}

interface Replica {
  identity: string;
  manager: Manager;
  client: SimClient;
}

/** One operator Deployment with one replica that can crash and restart. */
export class OperatorProcess {
  #replica?: Replica;
  #started = 0;
  /** Identities of every replica started, in order. */
  readonly identities: string[] = [];

  constructor(readonly opts: OperatorOptions) {}

  /** The running replica's Manager, if any. */
  get manager(): Manager | undefined {
    return this.#replica?.manager;
  }

  /** How many replicas were started (1 + restarts). */
  get starts(): number {
    return this.#started;
  }

  /** Starts a new replica (a new Pod: new identity, empty caches). */
  start(): void {
    if (this.#replica) throw new Error("operator already running");
    const n = this.#started++;
    const identity = `platform-operator-${n}`;
    const clock = this.opts.cluster.clock.view();
    const client = this.opts.cluster.client(`operator/${identity}`, {
      manager: FIELD_MANAGER,
      clock,
    });
    const manager = new Manager({
      cluster: client,
      clock,
      random: this.opts.prng.fork(`replica/${n}`),
      log: this.opts.log ?? nullLogger,
      controllers: [...(this.opts.controllers ?? ALL_CONTROLLERS)],
      images: DEFAULT_IMAGES,
      identity,
      leaderElection: this.opts.leaderElection === false
        ? false
        : { namespace: OPERATOR_NAMESPACE, name: LEASE_NAME },
    });
    this.identities.push(identity);
    this.#replica = { identity, manager, client };
    manager.start().catch((err) => this.opts.onError?.(err));
  }

  /** Kills the replica at once: no graceful shutdown, nothing released, nothing completes. */
  crash(): void {
    const r = this.#replica;
    if (!r) return;
    this.#replica = undefined;
    r.manager.abort("crash");
    r.client.kill();
  }

  /** Graceful stop (SIGTERM); resolves when the Manager has stopped. */
  async stop(): Promise<void> {
    const r = this.#replica;
    if (!r) return;
    this.#replica = undefined;
    await r.manager.stop("sim end");
  }
}
