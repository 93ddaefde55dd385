/**
 * The side-by-side benches' pieces that run without a control plane: where the peer's checkout
 * comes from, what a directory that is not one gets, whom the peer acts as (its own ServiceAccount,
 * its token in its kubeconfig), when its first reconcile began and ended, the namespaces a size is
 * spread over, and the plot of memory and time against the number of RateLimits.
 */
import assert from "node:assert/strict";
import { parseArgs } from "../../bench/main.ts";
import { join } from "node:path";
import {
  buildPeer,
  installPeerIdentity,
  PEER_ENV,
  peerCheckout,
  peerFirstReconcile,
} from "../../bench/cluster/peer.ts";
import { peerSubject } from "../../bench/cluster/subject.ts";
import type { BenchCluster } from "../../bench/cluster/env.ts";
import type { AdminKubectl } from "../../tools/cluster/operator_identity.ts";
import { convergeWrites, layout, workload, writesNote } from "../../bench/cluster/phases.ts";
import type { AuditEvent } from "../../tools/cluster/mod.ts";
import { firstReconcileOf, isOnlyRequeue } from "../../bench/cluster/operator.ts";
import { KYMA_RATELIMIT } from "../../bench/cluster/peer.ts";
import { mergeFigures, renderScaleSvg, scalePoints } from "../../bench/plot.ts";
import type { Figure } from "../../bench/report.ts";

Deno.test("the peer's checkout: --peer wins over the environment; neither means no peer", () => {
  assert.equal(parseArgs(["--peer=/x"]).peer, "/x");
  const before = Deno.env.get(PEER_ENV);
  try {
    Deno.env.delete(PEER_ENV);
    assert.equal(peerCheckout(undefined), undefined);
    Deno.env.set(PEER_ENV, "/from-env");
    assert.equal(peerCheckout(undefined), "/from-env");
    assert.equal(peerCheckout("/from-flag"), "/from-flag");
  } finally {
    if (before === undefined) Deno.env.delete(PEER_ENV);
    else Deno.env.set(PEER_ENV, before);
  }
});

Deno.test("a directory that is not a checkout of api-gateway is refused by name", async () => {
  const dir = await Deno.makeTempDir();
  await assert.rejects(buildPeer(dir), /is not a checkout of kyma-project\/api-gateway/);
});

/** What the peer's identity applies, as far as the test reads it. */
interface Applied {
  kind: string;
  metadata: { name: string; namespace?: string };
  roleRef?: { name: string };
  subjects?: unknown;
}
/** A kubeconfig, as far as the test reads it. */
interface Kubeconfig {
  clusters: { cluster: { server: string } }[];
  users: { name: string; user: { token: string } }[];
  contexts: { context: { user: string } }[];
}

Deno.test("the peer acts as its own ServiceAccount, with its token, not as the bench's admin", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const token = "header.payload.signature";
    const calls: { args: string[]; stdin?: string }[] = [];
    const k: AdminKubectl = (args, o) => {
      calls.push({ args, ...(o?.stdin === undefined ? {} : { stdin: o.stdin }) });
      return Promise.resolve(args[0] === "create" ? `${token}\n` : "applied\n");
    };
    const server = "https://127.0.0.1:6443";
    const access = await installPeerIdentity(k, server, "CA PEM", join(dir, "kubeconfig-peer"));
    const user = "system:serviceaccount:kyma-system:bench-ratelimit-peer";
    assert.equal(access.user, user);

    // Its ServiceAccount, bound to cluster-admin, is applied before its token is asked for.
    assert.deepEqual(calls.map((c) => c.args.slice(0, 2)), [["apply", "-f"], ["create", "token"]]);
    const applied: Applied[] = calls[0].stdin!.split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(
      applied.map((o) => `${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`),
      [
        "ServiceAccount kyma-system/bench-ratelimit-peer",
        "ClusterRoleBinding /bench-ratelimit-peer",
      ],
    );
    assert.equal(applied[1].roleRef?.name, "cluster-admin");
    assert.deepEqual(applied[1].subjects, [
      { kind: "ServiceAccount", name: "bench-ratelimit-peer", namespace: "kyma-system" },
    ]);
    assert.deepEqual(calls[1].args.slice(2, 5), ["bench-ratelimit-peer", "-n", "kyma-system"]);

    // Its kubeconfig carries that token, for the bench's API server.
    const kc: Kubeconfig = JSON.parse(await Deno.readTextFile(access.kubeconfig));
    assert.equal(kc.users.length, 1);
    assert.equal(kc.users[0].user.token, token);
    assert.equal(kc.clusters[0].cluster.server, server);
    assert.equal(kc.contexts[0].context.user, kc.users[0].name);

    // The figures keyed on the subject's user count that user's writes, not the admin's.
    const subject = peerSubject({} as BenchCluster, "/no/binary", access);
    assert.equal(subject.user, user);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sizes spread 1,000 RateLimits a namespace; the peer's objects are of its own type", () => {
  assert.deepEqual(layout("x", 100, true), [["x", 100]]);
  assert.deepEqual(layout("x", 2_500, true), [["x-0", 1_000], ["x-1", 1_000], ["x-2", 500]]);
  assert.deepEqual(layout("x", 2_500, false), [["x", 2_500]]);
  const objects = workload(2, 4, "ns", KYMA_RATELIMIT);
  assert.deepEqual(objects.map((o) => `${o.apiVersion} ${o.kind}`), [
    "v1 Pod",
    "gateway.kyma-project.io/v1alpha1 RateLimit",
    "v1 Pod",
    "gateway.kyma-project.io/v1alpha1 RateLimit",
  ]);
  assert.equal(
    typeof objects[0].metadata.annotations?.["sidecar.istio.io/status"],
    "string",
    "the peer refuses Pods without the sidecar annotation",
  );
});

Deno.test("the plot takes memory and time to Ready of each subject, one-namespace runs apart", () => {
  const f = (name: string, value: number): Figure => ({ section: "s", name, value, unit: "" });
  const figures = [
    f("operator: resident memory, 0 RateLimits", 70),
    f("operator: resident memory, 1,000 RateLimits Ready", 120),
    f("peer: resident memory, 1,000 RateLimits Ready", 125),
    f("operator: 1,000 RateLimits (4 rules) on 1,000 Pods, created at once, until all Ready", 20),
    f(
      "operator: 10,000 RateLimits on 10,000 Pods in one namespace, created at once, until all Ready",
      300,
    ),
    f("peer: 10,000 RateLimits on 10,000 Pods, until all Ready", 900),
    f("operator: CPU seconds to converge 1,000 RateLimits", 5),
  ];
  const p = scalePoints(figures);
  assert.deepEqual([...p.memoryMb.get("operator")!], [[0, 70], [1_000, 120]]);
  assert.deepEqual([...p.memoryMb.get("peer")!], [[1_000, 125]]);
  assert.deepEqual([...p.readySeconds.get("operator")!], [[1_000, 20]]);
  assert.deepEqual([...p.readySeconds.get("peer")!], [[10_000, 900]]);
  const svg = renderScaleSvg(p, "test");
  assert.match(svg, /^<svg /);
  assert.equal(svg.match(/<polyline /g)?.length, 4, "a line a subject in each panel");
  assert.match(svg, /<title>peer, 10,000 RateLimits: 900 seconds<\/title>/);
});

Deno.test("the plot merges runs: a later run's figure replaces the earlier one of its name", () => {
  const f = (name: string, value: number): Figure => ({ section: "s", name, value, unit: "" });
  const side = [
    f("operator: resident memory, 0 RateLimits", 61),
    f("operator: resident memory, 1,000 RateLimits Ready", 93),
  ];
  const idle = [f("operator: resident memory, 0 RateLimits", 58)];
  const merged = mergeFigures([side, idle]);
  assert.deepEqual(merged.map((x) => [x.name, x.value]), [
    ["operator: resident memory, 0 RateLimits", 58],
    ["operator: resident memory, 1,000 RateLimits Ready", 93],
  ]);
  assert.deepEqual([...scalePoints(merged).memoryMb.get("operator")!], [[0, 58], [1_000, 93]]);
});

Deno.test("the peer's first reconcile: begun at its first start, done at the first finish after", () => {
  const line = (ts: number, msg: string) =>
    JSON.stringify({ level: "info", ts, msg, controller: "ratelimit" });
  const log = [
    "I1125 klog line, not its own",
    line(1_000_050, "Reconciliation finished"), // another process's, before its first start
    line(1_000_300, "Starting reconciliation"),
    "{not json",
    line(1_000_500, "Validating RateLimit resource"),
    line(1_000_900, "Starting reconciliation"),
    line(1_002_700, "Reconciliation finished"),
    line(1_002_800, "Reconciliation finished"),
  ];
  assert.equal(peerFirstReconcile("", 1_000_000), undefined);
  assert.deepEqual(peerFirstReconcile(log.slice(0, 5).join("\n"), 1_000_000), { begunMs: 300 });
  assert.deepEqual(peerFirstReconcile(log.join("\n"), 1_000_000), {
    begunMs: 300,
    doneMs: 2_700,
  });
});

Deno.test("a convergence's writes: Events sent before the last status write are counted and said", () => {
  const at = (s: number, resource: string, subresource?: string): AuditEvent => ({
    auditID: `${resource}-${s}`,
    stage: "ResponseComplete",
    verb: resource === "events" ? "create" : "patch",
    requestURI: "/",
    user: { username: "op" },
    objectRef: { resource, ...(subresource ? { subresource } : {}) },
    requestReceivedTimestamp: new Date(Date.UTC(2026, 10, 29, 12, 0, s)).toISOString(),
    stageTimestamp: new Date(Date.UTC(2026, 10, 29, 12, 0, s)).toISOString(),
  });
  const writes = [
    at(1, "envoyfilters"),
    at(2, "ratelimits", "status"),
    at(3, "events"),
    at(4, "envoyfilters"),
    at(5, "ratelimits", "status"),
    at(6, "events"),
    at(7, "events"),
  ];
  const w = convergeWrites(writes, 2);
  assert.equal(w.perObject, 3.5);
  assert.equal(w.events, 3);
  assert.equal(w.eventsBeforeLastStatus, 1, "the Event at 3 s came before the status at 5 s");
  assert.match(writesNote(w), /; 1 of its 3 Events sent before its last status write$/);
  const none = convergeWrites(writes.filter((x) => x.objectRef?.resource !== "events"), 2);
  assert.doesNotMatch(writesNote(none), /Events sent/, "no Events, nothing said of them");
});

Deno.test("the operator's first reconcile: a reconcile that only asked to run again is not it", async () => {
  const startedAt = Date.UTC(2026, 10, 29, 12, 0, 0);
  const at = (ms: number) => new Date(startedAt + ms).toISOString();
  const lines = [
    { ts: at(-50), msg: "reconciled", result: "success", writes: 0, ms: 1 }, // before the spawn
    { ts: at(400), msg: "caches synced and leading: reconciling" },
    // Looked at before the EnvoyFilter list came in: its filter unknown, run again later.
    { ts: at(420), msg: "reconciled", result: "requeue_after", writes: 0, ms: 1 },
    { ts: at(520), msg: "reconciled", result: "success", writes: 0, ms: 12 },
  ];
  const first = await firstReconcileOf({ startedAt, logLines: () => Promise.resolve(lines) });
  assert.deepEqual(first, { begunMs: 508, doneMs: 520 });
  assert.equal(isOnlyRequeue(lines[2]), true);
  assert.equal(isOnlyRequeue({ result: "requeue_after", writes: 2 }), false, "it wrote: counted");
});
