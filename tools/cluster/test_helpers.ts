/** Helpers of the cluster tests: polling and kubectl calls that must succeed. */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { ClusterHandle } from "./mod.ts";

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` every 250 ms until it returns a value; throws naming `what` after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** Runs kubectl as admin, asserts it exits 0 and returns stdout. */
export async function ok(c: ClusterHandle, args: string[], stdin?: string): Promise<string> {
  const r = await c.kubectl(args, { stdin });
  assertEquals(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** A one-replica Deployment whose Pod kwok makes Ready (its image is never pulled). */
export function deploymentManifest(ns: string, name: string): Record<string, unknown> {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "app", image: "example.invalid/app:1" }] },
      },
    },
  };
}

/** {@link deploymentManifest} as kubectl's stdin. */
export function deployment(ns: string, name: string): string {
  return JSON.stringify(deploymentManifest(ns, name));
}
