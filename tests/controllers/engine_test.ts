/**
 * The global rate limit engine's controller (src/controllers/engine.ts) run by the Manager on the
 * simulated API server: the engine deployed from the named Secret, watched in the engine's
 * namespace only; put back when someone deletes a piece; rolled when the Secret changes; left as
 * it is (with a Warning Event on the Secret) when the Secret turns bad or goes; quiet at its fixed
 * point.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import type { Cluster, ListOptions, WatchOptions } from "../../src/runtime/cluster.ts";
import { forwardingTo } from "../../src/runtime/cluster.ts";
import { Manager } from "../../src/runtime/manager.ts";
import {
  ENGINE_SELECTOR,
  ENGINE_TYPES,
  engineControllerFor,
  type EngineControllerSettings,
} from "../../src/controllers/engine.ts";
import {
  DEFAULT_ENGINE_RESOURCES,
  XDS_TLS_SECRET_DIGEST_ANNOTATION,
} from "../../src/reconcile/engine/mod.ts";
import { REDIS_SECRET_DIGEST_ANNOTATION } from "../../src/api/global_engine.ts";
import { TEST_NAMESPACES, TestCluster } from "../runtime/test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "../runtime/helpers.ts";
import { images } from "../runtime/manager_fixtures.ts";

const NS = "platform-ratelimit";

function secret(name: string, namespace: string, data: Record<string, string>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, btoa(v)])),
  };
}

/** The cluster as the operator sees it, recording each list and watch and each write. */
function recording(cluster: Cluster) {
  const reads: { verb: string; kind: string; namespace?: string; selector?: string }[] = [];
  const writes: string[] = [];
  const events: KubeObject[] = [];
  const f = forwardingTo(cluster);
  const read = (verb: string, t: ResourceType, o?: ListOptions | WatchOptions) =>
    reads.push({
      verb,
      kind: t.kind,
      ...(o?.namespace ? { namespace: o.namespace } : {}),
      ...(o?.labelSelector ? { selector: o.labelSelector } : {}),
    });
  const wrapped: Cluster = {
    ...f,
    list: (t, o) => {
      read("list", t, o);
      return f.list(t, o);
    },
    watch: (t, o, s) => {
      read("watch", t, o);
      return f.watch(t, o, s);
    },
    create: (t, o, opts) => {
      if (t.kind === "Event") events.push(o);
      else writes.push(`create:${t.kind}`);
      return f.create(t, o, opts);
    },
    apply: (t, o, opts) => {
      writes.push(`apply:${t.kind}`);
      return f.apply(t, o, opts);
    },
    delete: (t, ns, n, o) => {
      writes.push(`delete:${t.kind}:${n}`);
      return f.delete(t, ns, n, o);
    },
  };
  return { cluster: wrapped, reads, writes, events };
}

function setup(extra: Partial<EngineControllerSettings> = {}) {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock, [...TEST_NAMESPACES, NS]);
  const rec = recording(cluster);
  const { log } = captureLogger(clock);
  const m = new Manager({
    cluster: rec.cluster,
    clock,
    random: seededRandom(3),
    log,
    controllers: [engineControllerFor({
      secret: { namespace: NS, name: "redis" },
      image: "localhost/platform-project/ratelimit-engine:test",
      replicas: 2,
      resources: DEFAULT_ENGINE_RESOURCES,
      ...extra,
    })],
    images,
    namespace: "platform-system",
    identity: "op-0",
    leaderElection: false,
  });
  return { clock, cluster, rec, m, done: m.start() };
}

type Deployment = {
  metadata: { resourceVersion?: string };
  spec: {
    template: {
      metadata: { annotations: Record<string, string> };
      spec: { containers: { env: { name: string; value?: string }[] }[] };
    };
  };
};

function deployment(cluster: TestCluster): Deployment | undefined {
  return cluster.peek(RESOURCES.Deployment, NS, "ratelimit-engine") as Deployment | undefined;
}

const digestOf = (d: Deployment | undefined) =>
  d?.spec.template.metadata.annotations[REDIS_SECRET_DIGEST_ANNOTATION];
const urlOf = (d: Deployment | undefined) =>
  d?.spec.template.spec.containers[0].env.find((e) => e.name === "REDIS_URL")?.value;

Deno.test("the engine is deployed from its Secret, watched in its namespace only, and kept", async () => {
  const t = setup();
  t.cluster.put(RESOURCES.Secret, secret("redis", NS, { address: "redis-a:6379" }));
  // Another namespace's Secret of the same name, and another Secret of the engine's namespace:
  // neither is the flag's.
  t.cluster.put(RESOURCES.Secret, secret("redis", "default", { address: "elsewhere:1" }));
  t.cluster.put(RESOURCES.Secret, secret("other", NS, { type: "ring" }));
  await t.clock.advance(2_000);

  // Every engine object, labelled; the Deployment from the flag's Secret.
  for (const type of ENGINE_TYPES) {
    const o = t.cluster.peek(type, NS, "ratelimit-engine");
    assert.ok(o, type.kind);
    assert.equal(o.metadata.labels?.["app.kubernetes.io/managed-by"], "platform-operator");
  }
  assert.equal(urlOf(deployment(t.cluster)), "redis-a:6379");

  // Secrets listed and watched in the engine's namespace only; the engine's kinds by its labels.
  const secretReads = t.rec.reads.filter((r) => r.kind === "Secret");
  assert.ok(secretReads.length >= 2);
  assert.ok(secretReads.every((r) => r.namespace === NS && r.selector === undefined));
  for (const type of ENGINE_TYPES) {
    const reads = t.rec.reads.filter((r) => r.kind === type.kind);
    assert.ok(reads.length >= 2, type.kind);
    assert.ok(reads.every((r) => r.namespace === NS && r.selector === ENGINE_SELECTOR), type.kind);
  }
  // One Event, on the flag's Secret; nothing about the other Secrets.
  assert.deepEqual(
    t.rec.events.map((e) => [e.reason, (e.involvedObject as { name: string }).name]),
    [["EngineConfigured", "redis"]],
  );
  assert.equal(t.rec.events[0].metadata.namespace, NS);

  // At the fixed point: no writes across resyncs.
  const settled = t.rec.writes.length;
  await t.clock.advance(30 * 60_000);
  assert.deepEqual(t.rec.writes.slice(settled), []);

  // A piece deleted by someone: put back.
  await t.cluster.delete(RESOURCES.PodDisruptionBudget, NS, "ratelimit-engine");
  await t.clock.advance(2_000);
  assert.ok(t.cluster.peek(RESOURCES.PodDisruptionBudget, NS, "ratelimit-engine"));

  await t.m.stop();
  await t.done;
});

Deno.test("a changed Secret rolls the engine; a bad one or none leaves it as it was", async () => {
  const t = setup();
  t.cluster.put(RESOURCES.Secret, secret("redis", NS, { address: "redis-a:6379" }));
  await t.clock.advance(2_000);
  const first = digestOf(deployment(t.cluster));
  assert.ok(first);

  // A new version (a rotated password, say): a new digest, so the Pods roll.
  const current = () => t.cluster.peek(RESOURCES.Secret, NS, "redis")!;
  t.cluster.put(RESOURCES.Secret, {
    ...current(),
    data: secret("redis", NS, { address: "redis-b:6379", password: "rotated-1" }).data,
  });
  await t.clock.advance(2_000);
  const second = deployment(t.cluster);
  assert.notEqual(digestOf(second), first);
  assert.equal(urlOf(second), "redis-b:6379");
  assert.ok(!JSON.stringify(second).includes("rotated-1"));

  // A bad version: nothing written to the engine, a Warning on the Secret.
  const writes = t.rec.writes.length;
  const before = JSON.stringify(deployment(t.cluster));
  t.cluster.put(RESOURCES.Secret, {
    ...current(),
    data: secret("redis", NS, { address: "redis-c:6379", tls: "true", "tls.key": "x" }).data,
  });
  await t.clock.advance(2_000);
  assert.deepEqual(t.rec.writes.slice(writes), []);
  assert.equal(JSON.stringify(deployment(t.cluster)), before);
  const warning = t.rec.events.find((e) => e.reason === "RedisSecretInvalid");
  assert.ok(warning);
  assert.equal(warning.type, "Warning");
  assert.match(String(warning.message), /half a client certificate: tls.key without tls.crt/);

  // The Secret removed: the engine stays.
  await t.cluster.delete(RESOURCES.Secret, NS, "redis");
  await t.clock.advance(60_000);
  assert.equal(JSON.stringify(deployment(t.cluster)), before);
  assert.deepEqual(t.rec.writes.slice(writes).filter((w) => w.startsWith("delete")), []);

  await t.m.stop();
  await t.done;
});

Deno.test("with TLS to the xDS server: the engine waits for the second Secret, its edit rolls the engine, its removal or a bad version leaves it", async () => {
  const t = setup({
    xdsTls: { secret: { namespace: NS, name: "engine-xds-tls" }, clientCertRequired: true },
  });
  const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  const key = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n";
  t.cluster.put(RESOURCES.Secret, secret("redis", NS, { address: "redis-a:6379" }));
  await t.clock.advance(2_000);
  // No second Secret yet: nothing deployed (never an engine in cleartext), and a Warning.
  assert.equal(deployment(t.cluster), undefined);
  assert.match(
    String(t.rec.events.find((e) => e.reason === "RedisSecretInvalid")?.message),
    /Secret platform-ratelimit\/engine-xds-tls \(--global-engine-xds-tls-secret\) does not exist/,
  );
  // Created: its change wakes the Redis Secret's reconcile, and the engine is deployed with TLS.
  t.cluster.put(
    RESOURCES.Secret,
    secret("engine-xds-tls", NS, { "ca.crt": pem, "tls.crt": pem, "tls.key": key }),
  );
  await t.clock.advance(2_000);
  const tlsDigest = (d: Deployment | undefined) =>
    d?.spec.template.metadata.annotations[XDS_TLS_SECRET_DIGEST_ANNOTATION];
  const envOf = (d: Deployment | undefined, name: string) =>
    d?.spec.template.spec.containers[0].env.find((e) => e.name === name)?.value;
  const first = deployment(t.cluster);
  assert.equal(envOf(first, "CONFIG_GRPC_XDS_SERVER_USE_TLS"), "true");
  assert.ok(tlsDigest(first));
  // Rotated (cert-manager wrote a new certificate): the digest changes, the engines roll.
  const current = () => t.cluster.peek(RESOURCES.Secret, NS, "engine-xds-tls")!;
  t.cluster.put(RESOURCES.Secret, {
    ...current(),
    data: secret("x", NS, { "ca.crt": pem, "tls.crt": pem + " ", "tls.key": key }).data,
  });
  await t.clock.advance(2_000);
  const second = deployment(t.cluster);
  assert.notEqual(tlsDigest(second), tlsDigest(first));
  assert.equal(digestOf(second), digestOf(first), "the Redis Secret's digest stays");
  // A bad version (no client certificate while the operator requires one): nothing written.
  const writes = t.rec.writes.length;
  t.cluster.put(RESOURCES.Secret, { ...current(), data: secret("x", NS, { "ca.crt": pem }).data });
  await t.clock.advance(2_000);
  assert.deepEqual(t.rec.writes.slice(writes), []);
  assert.ok(
    t.rec.events.some((e) =>
      /requires a client certificate of the engines/.test(String(e.message))
    ),
  );
  // Deleted: the engine stays as it is.
  await t.cluster.delete(RESOURCES.Secret, NS, "engine-xds-tls");
  await t.clock.advance(60_000);
  assert.deepEqual(t.rec.writes.slice(writes), []);
  assert.equal(tlsDigest(deployment(t.cluster)), tlsDigest(second));
  await t.m.stop();
  await t.done;
});
