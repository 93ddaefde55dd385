/**
 * Scenario fault steps: targeted API errors, Deployment faults, crashes, clock jumps, watch faults,
 * the leader partitioned or the API server down, and the mesh's: proxies that reject pushes or do
 * not connect, istiod unreachable.
 */
import { ApiError } from "../../src/runtime/mod.ts";
import { partitionLeader } from "../chaos.ts";
import { matchesTarget } from "../faults.ts";
import type { Simulation } from "../simulation.ts";
import type { FaultStep } from "./format.ts";

function describe(t: { kind?: string; namespace?: string; name?: string }): string {
  return `${t.kind ?? "*"} ${t.namespace ? `${t.namespace}/` : ""}${t.name ?? "*"}`;
}

function proxyTarget(t: { namespace?: string; name?: string }): string {
  return `Pods ${t.namespace ?? "*"}/${t.name ?? "*"}`;
}

/** Applies one fault step now; returns a description for the timeline. */
export function applyFault(sim: Simulation, f: FaultStep): string {
  const inj = sim.injector;
  switch (f.kind) {
    case "apiError":
      inj.rules.push({
        ...(f.verb ? { verb: f.verb } : {}),
        target: f.target,
        code: f.code,
        count: f.count,
        ...(f.retryAfter !== undefined
          ? { retryAfterSeconds: Math.ceil(f.retryAfter / 1000) }
          : {}),
        ...(f.message ? { message: f.message } : {}),
      });
      return `fault apiError ${f.code} on ${f.verb ?? "any verb"} ${
        describe(f.target)
      } x${f.count}`;
    case "replicaFailure":
      if (f.clear) inj.clearDeployments(f.target);
      else {
        inj.failDeployments(
          f.target,
          f.message ??
            `pods "${
              f.target.name ?? "pod"
            }-" is forbidden: exceeded quota: compute-resources, requested: pods=1, used: pods=10, limited: pods=10`,
        );
      }
      sim.cluster.deployments.resyncAll();
      return `fault replicaFailure ${f.clear ? "cleared on" : "on"} ${describe(f.target)}`;
    case "slowDeployment":
      if (f.clear) inj.clearDeployments(f.target);
      else inj.slowDeployments(f.target, f.delay);
      return `fault slowDeployment ${f.clear ? "cleared on" : `${f.delay} ms on`} ${
        describe(f.target)
      }`;
    case "crash":
      sim.crash(f.restartAfter);
      return `fault crash, restart after ${f.restartAfter} ms`;
    case "clockJump":
      sim.clock.jump(f.by);
      return `fault clock jumps ${f.by} ms`;
    case "proxyReject":
      sim.istiod.rejectPushes(f.target, f.count);
      return `fault proxyReject: the proxies of ${proxyTarget(f.target)} reject the next ${
        f.count === 1 ? "push" : `${f.count} pushes`
      }`;
    case "proxyDisconnect":
      if (f.clear) sim.istiod.clear(f.target);
      else sim.istiod.holdBack(f.target);
      return `fault proxyDisconnect ${f.clear ? "cleared on" : "on"} ${proxyTarget(f.target)}`;
    case "istiodUnreachable":
      if (f.clear) sim.istiod.reachable();
      else sim.istiod.unreachable(f.for === undefined ? undefined : sim.clock.now() + f.for);
      return f.clear
        ? "fault istiodUnreachable cleared"
        : `fault istiodUnreachable ${f.for === undefined ? "until cleared" : `for ${f.for} ms`}`;
    case "compact": {
      const type = sim.cluster.store.types.byKindName(f.target.kind ?? "");
      if (!type) throw new Error(`compact: unknown kind ${f.target.kind}`);
      sim.cluster.store.compact(type);
      return `fault compact ${type.kind} history`;
    }
    case "partition": {
      const holder = partitionLeader(sim, f.for);
      if (!holder) throw new Error("fault partition: no running replica holds the Lease");
      return `fault partition: ${holder} cut off the API server for ${f.for} ms`;
    }
    case "apiServerDown": {
      // As a restart (its watches end with it) or etcd stopped beneath it (they stay open).
      sim.injector.cutOff(undefined, sim.clock.now() + f.for, "refused");
      let ended = 0;
      for (const w of [...sim.cluster.watches]) {
        if (f.watches === "keep" || !w.actor.startsWith("operator/")) continue;
        w.stream.end();
        ended++;
      }
      return `fault apiServerDown for ${f.for} ms (${ended} operator watches ended)`;
    }
    default: {
      let hit = 0;
      for (const w of [...sim.cluster.watches]) {
        if (
          !w.actor.startsWith("operator/") ||
          !matchesTarget(f.target, w.type.kind, undefined, undefined)
        ) continue;
        hit++;
        if (f.kind === "watchDrop") w.stream.end();
        else if (f.kind === "watchStall") w.stream.stall();
        else {w.stream.failWith(
            new ApiError(410, "Expired", "The resourceVersion for the provided watch is too old."),
          );}
      }
      if (hit === 0) {
        throw new Error(
          `fault ${f.kind}: no operator watch of ${f.target.kind ?? "any kind"} is open now`,
        );
      }
      return `fault ${f.kind} on ${hit} open ${f.target.kind ?? "any"} watch(es)`;
    }
  }
}
