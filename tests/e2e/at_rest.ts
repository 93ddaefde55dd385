/** The e2e check that an operator at rest writes nothing. */
import assert from "node:assert/strict";
import { OPERATOR_USER } from "../../tools/cluster/mod.ts";
import { type E2E, waitFor } from "./harness.ts";

/**
 * Waits until the operator has not written for 5 s, then asserts it writes nothing (in
 * `namespace`, or anywhere) for `forMs`.
 */
export async function assertNoWritesAtRest(
  env: E2E,
  forMs: number,
  namespace?: string,
): Promise<void> {
  let quietSince = Date.now();
  await waitFor("5 s without operator writes", async () => {
    const n = await env.cluster.countWrites({ user: OPERATOR_USER, sinceMs: Date.now() - 5_000 });
    if (n > 0) quietSince = Date.now();
    return Date.now() - quietSince >= 5_000;
  }, { timeoutMs: 45_000, intervalMs: 1_000 });
  const from = Date.now();
  await new Promise((r) => setTimeout(r, forMs));
  const writes = await env.cluster.writes({
    user: OPERATOR_USER,
    sinceMs: from,
    ...(namespace ? { namespace } : {}),
  });
  assert.deepEqual(writes.map((w) => `${w.verb} ${w.requestURI}`), []);
}
