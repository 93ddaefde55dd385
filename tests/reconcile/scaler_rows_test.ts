/** Walks every row of docs/design.md's Scaler state table (and the project's row 13, Warning) through the reducer. */
import assert from "node:assert/strict";
import { KEDA_DEPLOYMENTS } from "../../src/reconcile/scaler/names.ts";
import { METRICS_API_GRACE_MS, metricsApiStep } from "../../src/reconcile/scaler/metrics_api.ts";
import {
  CLUSTER_DNS_GRACE_MS,
  dialedOperatorHost,
} from "../../src/reconcile/scaler/cluster_dns.ts";
import {
  type DnsLookupFields,
  dnsLookupObject,
  dnsResolverObject,
} from "../../src/api/cluster_dns.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { SCALER_FINALIZER } from "../../src/reconcile/labels.ts";
import {
  reconcileScaler,
  SCALER_STATES,
  type ScalerInput,
} from "../../src/reconcile/scaler/mod.ts";
import { conditionOf, inputOf, installed, NOW, scaler, statusOf } from "./scaler_fixtures.ts";
import { type RowCase, testStateRows } from "./module_rows.ts";
import { carryOut } from "./plans_on_sim_store.ts";
import { deleting, type World } from "./module_fixtures.ts";

function withDeployment(w: World, name: string, status: Record<string, unknown>): World {
  return {
    ...w,
    installed: w.installed.map((
      o,
    ) => (o.kind === "Deployment" && o.metadata.name === name ? { ...o, status } : o)),
  };
}

/** `w` with the aggregator's status on KEDA's APIService (`conditions` its Available, or none). */
function withAggregator(w: World, available?: Record<string, unknown>): World {
  return {
    ...w,
    installed: w.installed.map((o) =>
      o.kind === "APIService"
        ? { ...o, status: available ? { conditions: [{ type: "Available", ...available }] } : {} }
        : o
    ),
  };
}

/** What kube-aggregator writes when the metrics Service has no ready endpoint. */
const MISSING_ENDPOINTS = {
  status: "False",
  reason: "MissingEndpoints",
  message:
    `endpointslices for service/keda-operator-metrics-apiserver in "platform-system" have no addresses with port name "https"`,
};

/** The name KEDA's metrics server dials in platform-system. */
const OPERATOR_HOST = "keda-operator.platform-system.svc.cluster.local";

/** RFC 3339 (whole seconds) of `ms` before NOW. */
const ago = (ms: number) => new Date(NOW - ms).toISOString().replace(/\.\d+Z$/, "Z");

/** The object saying the operator looks names up (in its namespace). */
const ASKING = dnsResolverObject("platform-system", "the operator Pod's resolver");

/** The operator's lookup of the name KEDA's metrics server dials: failing since `forMs`. */
function failedLookup(forMs: number, host = OPERATOR_HOST): KubeObject[] {
  const fields: DnsLookupFields = {
    result: "Failed",
    host,
    server: "the operator Pod's resolver",
    error: "no answer within 2 s",
    since: ago(forMs),
  };
  return [ASKING, dnsLookupObject("platform-system", KEDA_DEPLOYMENTS.metricServer, fields)];
}

/** The same name resolving. */
function resolvedLookup(): KubeObject[] {
  return [
    ASKING,
    dnsLookupObject("platform-system", KEDA_DEPLOYMENTS.metricServer, {
      result: "Resolved",
      host: OPERATOR_HOST,
      server: "the operator Pod's resolver",
      addresses: ["10.96.0.20"],
      since: ago(600_000),
    }),
  ];
}

/** An installed Scaler whose spec changed to `spec` (generation 2), its objects not yet updated. */
function changed(spec: Record<string, unknown>): World {
  const w = installed();
  const object = structuredClone(w.object!);
  object.spec = spec;
  object.metadata.generation = 2;
  return { ...w, object };
}

/** The world without the keda-operator ClusterRole (someone deleted it): it must be applied again. */
function withoutClusterRole(w: World): World {
  return {
    ...w,
    installed: w.installed.filter((o) =>
      !(o.kind === "ClusterRole" && o.metadata.name === "keda-operator")
    ),
  };
}

type Case = RowCase<ScalerInput>;

const CASES: Record<number, Case> = {
  1: {
    input: () => inputOf(installed()),
    message:
      /^KEDA 2\.20\.2 is installed: keda-operator, keda-operator-metrics-apiserver, keda-admission-webhooks are ready\.$/,
    check: (plan) => {
      assert.equal(statusOf(plan).kedaVersion, "2.20.2");
      assert.equal(plan.requeueAfterMs, undefined);
      assert.deepEqual([plan.apply, plan.delete, plan.events], [[], [], []]);
    },
  },
  2: {
    input: () => inputOf({ object: scaler(), others: [], installed: [] }),
    message: /^Claimed as the served Scaler; installing KEDA 2\.20\.2 next\.$/,
    check: (plan) => {
      assert.deepEqual(plan.finalizer, { add: SCALER_FINALIZER });
      assert.deepEqual(plan.apply, []);
      assert.equal(statusOf(plan).served, "True");
    },
  },
  3: {
    input: () =>
      inputOf({ object: { ...scaler(), status: { served: "True" } }, others: [], installed: [] }),
    message:
      /^Installing KEDA 2\.20\.2: applying CustomResourceDefinition scaledobjects\.keda\.sh, .* and \d+ more\.$/,
    check: (plan) => {
      const names = plan.apply.map((o) => `${o.kind}/${o.metadata.name}`);
      for (const n of Object.values(KEDA_DEPLOYMENTS)) {
        assert.ok(names.includes(`Deployment/${n}`), n);
      }
      assert.ok(names.includes("APIService/v1beta1.external.metrics.k8s.io"));
      assert.ok(names.includes("ValidatingWebhookConfiguration/keda-admission"));
      assert.ok(plan.requeueAfterMs! > 0);
    },
  },
  4: {
    input: () =>
      inputOf(withoutClusterRole(changed({ logging: { operator: { level: "debug" } } })), {
        lastOutcome: {
          ok: false,
          failed: {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRole",
            name: "keda-operator",
          },
          error: "clusterroles is forbidden: attempt to grant extra privileges",
          generation: 2,
        },
      }),
    message:
      /^Applying ClusterRole keda-operator failed: clusterroles is forbidden: attempt to grant extra privileges$/,
    check: (plan) =>
      assert.ok(plan.apply.some((o) => o.kind === "ClusterRole"), "the write is tried again"),
  },
  5: {
    input: () =>
      inputOf(changed({ logging: { operator: { level: "debug" } } }), {
        lastOutcome: {
          ok: false,
          failed: {
            apiVersion: "apps/v1",
            kind: "Deployment",
            namespace: "platform-system",
            name: "keda-operator",
          },
          error: 'Deployment.apps "keda-operator" is invalid',
          generation: 2,
        },
      }),
    message:
      /^Applying Deployment platform-system\/keda-operator failed: Deployment\.apps "keda-operator" is invalid$/,
  },
  6: {
    input: () =>
      inputOf(withDeployment(installed(), "keda-operator", {
        observedGeneration: 1,
        conditions: [{
          type: "Progressing",
          status: "False",
          reason: "ProgressDeadlineExceeded",
          message: "timed out",
        }],
      })),
    message:
      /^Verification failed: Deployment platform-system\/keda-operator: ProgressDeadlineExceeded: timed out$/,
  },
  7: {
    input: () => {
      const first = { ...scaler({}, { name: "first" }), status: { served: "True" } };
      return inputOf({
        object: scaler({}, {
          name: "second",
          namespace: "other",
          creationTimestamp: "2025-12-03T00:00:00Z",
        }),
        others: [first],
        installed: [],
      });
    },
    message:
      /^Only one Scaler is allowed per cluster and platform-system\/first is the one in use; other\/second is ignored/,
    check: (plan) => {
      assert.equal(statusOf(plan).served, "False");
      assert.deepEqual([plan.apply, plan.delete, plan.finalizer], [[], [], undefined]);
    },
  },
  8: {
    input: () =>
      inputOf(withDeployment(installed(), "keda-operator-metrics-apiserver", {
        observedGeneration: 1,
        conditions: [{
          type: "ReplicaFailure",
          status: "True",
          reason: "FailedCreate",
          message: "exceeded quota",
        }],
      })),
    message:
      /^Replica failure: Deployment platform-system\/keda-operator-metrics-apiserver: FailedCreate: exceeded quota$/,
  },
  9: {
    input: () => inputOf(deleting(installed())),
    message: /^Deleting KEDA's objects; waiting for them to be gone\.$/,
    check: (plan) => assert.equal(plan.delete.length, installed().installed.length),
  },
  10: {
    input: () => inputOf({ ...deleting(installed()), installed: [] }),
    message: /^KEDA module deleted\.$/,
    check: (plan) => assert.deepEqual(plan.finalizer, { remove: SCALER_FINALIZER }),
  },
  11: {
    input: () =>
      inputOf(deleting(installed()), {
        userObjects: {
          ScaledObject: ["a/one", "b/two"],
          ScaledJob: [],
          TriggerAuthentication: ["a/t"],
        },
      }),
    message:
      /^Deletion is blocked: 2 ScaledObjects \(a\/one, b\/two\) and 1 TriggerAuthentication \(a\/t\) still exist\./,
    check: (plan) => assert.deepEqual([plan.delete, plan.finalizer], [[], undefined]),
  },
  12: {
    input: () => inputOf(changed({ resources: { operator: { requests: { memory: "2Gi" } } } })),
    message:
      /^Invalid configuration: spec\.resources\.operator\.requests\.memory: "2Gi" is above the default limit 1000Mi; raise spec\.resources\.operator\.limits\.memory or lower the request$/,
    check: (plan) => assert.deepEqual([plan.apply, plan.delete], [[], []], "nothing changes"),
  },
  13: {
    input: () =>
      inputOf(
        installed({
          podAnnotations: { operator: { "x.platform-project.io/y": "1", "scrape": "true" } },
        }),
      ),
    message:
      /^KEDA 2\.20\.2 is installed: .* are ready, but pod annotation x\.platform-project\.io\/y of operator was dropped: the platform-project\.io prefix is reserved for the operator\.$/,
    check: (plan) => assert.deepEqual([plan.apply, plan.delete], [[], []]),
  },
  14: {
    input: () => inputOf(withAggregator(installed(), MISSING_ENDPOINTS)),
    message:
      /^KEDA 2\.20\.2 is installed, but the aggregator reports APIService v1beta1\.external\.metrics\.k8s\.io \(Service platform-system\/keda-operator-metrics-apiserver\) not Available: MissingEndpoints: endpointslices for service\/keda-operator-metrics-apiserver in "platform-system" have no addresses with port name "https"\. HPAs cannot read KEDA's metrics until it is\.$/,
    check: (plan) => {
      assert.deepEqual([plan.apply, plan.delete], [[], []]);
      assert.equal(statusOf(plan).kedaVersion, "2.20.2");
      assert.ok(plan.requeueAfterMs! > 0);
      assert.deepEqual(plan.events.map((e) => [e.type, e.reason]), [
        ["Warning", "MetricsAPIUnavailable"],
      ]);
    },
  },
  15: {
    input: () => inputOf(installed(), { lookups: failedLookup(CLUSTER_DNS_GRACE_MS) }),
    message:
      /^KEDA 2\.20\.2 is installed, but cluster DNS has not resolved keda-operator\.platform-system\.svc\.cluster\.local, the name KEDA's metrics server dials to reach KEDA's operator, since \S+Z \(asked the operator Pod's resolver: no answer within 2 s\)\. HPAs cannot get KEDA's metrics until it does: check the cluster's DNS server \(CoreDNS behind the kube-dns Service\)\.$/,
    check: (plan) => {
      assert.deepEqual([plan.apply, plan.delete], [[], []], "nothing is written but the status");
      assert.equal(statusOf(plan).kedaVersion, "2.20.2");
      assert.ok(plan.requeueAfterMs! > 0);
      assert.deepEqual(plan.events.map((e) => [e.type, e.reason]), [
        ["Warning", "ClusterDNSUnavailable"],
      ]);
    },
  },
};

testStateRows("Scaler", SCALER_STATES, CASES, reconcileScaler);

Deno.test("Scaler: Ready then Warning emits a Warning event; back to Ready a Normal one", () => {
  const w = installed();
  const withAnn = structuredClone(w.object!);
  withAnn.spec = { podAnnotations: { metricServer: { "sidecar.istio.io/inject": "true" } } };
  withAnn.metadata.generation = 2;
  const warn = reconcileScaler(inputOf({ ...w, object: withAnn }));
  assert.equal(statusOf(warn).state, "Warning");
  assert.deepEqual(warn.events.map((e) => [e.type, e.reason]), [["Warning", "Verified"]]);
  assert.match(warn.events[0].message, /sidecar injection is set by spec\.istio/);
  const back = reconcileScaler(inputOf(carryOut({ ...w, object: withAnn }, warn)));
  assert.equal(statusOf(back).state, "Warning", "stable while nothing changes");
  assert.deepEqual(back.events, []);
  const warned = carryOut({ ...w, object: withAnn }, warn);
  const fixed = {
    ...warned,
    object: {
      ...warned.object!,
      spec: {},
      metadata: { ...warned.object!.metadata, generation: 3 },
    },
  };
  const ready = reconcileScaler(inputOf(fixed));
  assert.equal(statusOf(ready).state, "Ready");
  assert.deepEqual(ready.events.map((e) => [e.type, e.reason]), [["Normal", "Verified"]]);
});

Deno.test("Scaler: deletion removes everything it installed, then the finalizer", () => {
  let w = deleting(installed());
  w = carryOut(w, reconcileScaler(inputOf(w)));
  assert.deepEqual(w.installed, []);
  const last = reconcileScaler(inputOf(w));
  assert.equal(conditionOf(last, "Deleted")?.reason, "Deleted");
  assert.equal(carryOut(w, last).object, undefined);
});

Deno.test("Scaler: a failed write no longer pending, or of another generation, is not reported", () => {
  const failedRole = {
    ok: false,
    failed: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      name: "keda-operator",
    },
    error: "forbidden",
    generation: 2,
  };
  const pendingOther = reconcileScaler(
    inputOf(changed({ logging: { operator: { level: "debug" } } }), { lastOutcome: failedRole }),
  );
  assert.equal(
    conditionOf(pendingOther, "Installed")?.reason,
    "Verification",
    "the role is applied already",
  );
  const stale = reconcileScaler(
    inputOf(withoutClusterRole(changed({})), { lastOutcome: { ...failedRole, generation: 1 } }),
  );
  assert.equal(
    conditionOf(stale, "Installed")?.reason,
    "Verification",
    "made for the previous generation",
  );
  const self = {
    ok: false,
    failed: {
      apiVersion: "operator.platform-project.io/v1alpha1",
      kind: "Scaler",
      namespace: "platform-system",
      name: "default",
    },
    error: "conflict",
    generation: 2,
  };
  const own = reconcileScaler(inputOf(withoutClusterRole(changed({})), { lastOutcome: self }));
  assert.equal(
    conditionOf(own, "Installed")?.reason,
    "Verification",
    "the object's own status write is the runtime's",
  );
});

Deno.test("Scaler: Ready only while the aggregator reports KEDA's metrics APIService Available", () => {
  const w = installed();
  assert.equal(statusOf(reconcileScaler(inputOf(w))).state, "Ready");
  // No verdict yet, or Unknown (the aggregator could not read the Service): still verifying.
  for (
    const available of [undefined, {
      status: "Unknown",
      reason: "ServiceAccessError",
      message: "service/keda-operator-metrics-apiserver cannot be checked",
    }]
  ) {
    const plan = reconcileScaler(inputOf(withAggregator(w, available)));
    assert.equal(statusOf(plan).state, "Processing");
    assert.equal(conditionOf(plan, "Installed")?.reason, "Verification");
    assert.match(
      conditionOf(plan, "Installed")!.message,
      available ? /Available is Unknown: ServiceAccessError: / : /no Available condition yet/,
    );
  }
  // The discovery check fails (no DNS, no kube-proxy): Warning, then Ready again once it passes.
  const failing = withAggregator(w, {
    status: "False",
    reason: "FailedDiscoveryCheck",
    message:
      "failing or missing response from https://10.96.0.40:443/apis/external.metrics.k8s.io/v1beta1: dial tcp 10.96.0.40:443: i/o timeout",
  });
  const down = reconcileScaler(inputOf(failing));
  assert.equal(statusOf(down).state, "Warning");
  assert.match(conditionOf(down, "Installed")!.message, /FailedDiscoveryCheck: failing or missing/);
  const after = carryOut(failing, down, { ready: false });
  const again = reconcileScaler(inputOf(after));
  assert.deepEqual(again.events, [], "nothing new while the aggregator says the same");
  const healed = reconcileScaler(
    inputOf(withAggregator(after, { status: "True", reason: "Passed" })),
  );
  assert.equal(statusOf(healed).state, "Ready");
  assert.deepEqual(healed.events.map((e) => [e.type, e.reason]), [["Normal", "Verified"]]);
  assert.deepEqual([healed.apply, healed.delete], [[], []]);
  // Ready rests on KEDA's Deployments and the verdict: the runner reads them live before writing
  // it (a stalled watch can hold an old Available: True); a Warning or verification rests on none.
  assert.deepEqual(healed.confirm, [
    ...Object.values(KEDA_DEPLOYMENTS).map((name) => ({
      apiVersion: "apps/v1",
      kind: "Deployment",
      namespace: "platform-system",
      name,
    })),
    {
      apiVersion: "apiregistration.k8s.io/v1",
      kind: "APIService",
      name: "v1beta1.external.metrics.k8s.io",
    },
  ]);
  assert.equal(down.confirm, undefined);
});

Deno.test("Scaler: only the APIService it installed, pointing at KEDA's metrics Service, counts", () => {
  const w = installed();
  const elsewhere = w.installed.map((o) =>
    o.kind === "APIService"
      ? { ...o, spec: { ...(o.spec as object), service: { name: "other", namespace: "x" } } }
      : o
  );
  assert.match(
    metricsApiStep(elsewhere, "platform-system", NOW)?.message ?? "",
    /APIService v1beta1\.external\.metrics\.k8s\.io \(Service platform-system\/keda-operator-metrics-apiserver\) is not observed yet/,
  );
  assert.equal(metricsApiStep(w.installed, "platform-system", NOW), undefined);
  assert.notEqual(metricsApiStep(w.installed, "other-namespace", NOW), undefined);
});

Deno.test("Scaler: a False verdict younger than the grace is verification, then a Warning", () => {
  const w = installed();
  const at = (ms: number) => new Date(NOW - ms).toISOString().replace(/\.\d+Z$/, "Z");
  const young = withAggregator(w, { ...MISSING_ENDPOINTS, lastTransitionTime: at(10_000) });
  const catching = reconcileScaler(inputOf(young));
  assert.equal(statusOf(catching).state, "Processing");
  assert.match(
    conditionOf(catching, "Installed")!.message,
    /^Verifying KEDA 2\.20\.2: waiting for the aggregator to find APIService .* available; it reports MissingEndpoints: /,
  );
  assert.equal(catching.requeueAfterMs, METRICS_API_GRACE_MS - 10_000, "looks again when it ends");
  const old = withAggregator(w, {
    ...MISSING_ENDPOINTS,
    lastTransitionTime: at(METRICS_API_GRACE_MS),
  });
  assert.equal(statusOf(reconcileScaler(inputOf(old))).state, "Warning");
});

Deno.test("Scaler: never Ready while the operator's lookups of the name KEDA dials fail", () => {
  const w = installed();
  // No lookup (the operator outside the cluster), or one that resolves: nothing said of DNS.
  assert.equal(statusOf(reconcileScaler(inputOf(w))).state, "Ready");
  assert.equal(statusOf(reconcileScaler(inputOf(w, { lookups: [] }))).state, "Ready");
  assert.equal(statusOf(reconcileScaler(inputOf(w, { lookups: resolvedLookup() }))).state, "Ready");
  // A lookup of another name (what the Deployment dialed before) says nothing of this one.
  const stale = failedLookup(CLUSTER_DNS_GRACE_MS, "keda-operator.old.svc.cluster.local");
  assert.equal(statusOf(reconcileScaler(inputOf(w, { lookups: stale }))).state, "Ready");
  // Failing for less than the grace: verification in progress (not Ready), looked at again then.
  const young = reconcileScaler(inputOf(w, { lookups: failedLookup(10_000) }));
  assert.equal(statusOf(young).state, "Processing");
  assert.match(
    conditionOf(young, "Installed")!.message,
    /^Verifying KEDA 2\.20\.2: cluster DNS did not resolve keda-operator\.platform-system\.svc\.cluster\.local, the name KEDA's metrics server dials to reach KEDA's operator \(asked the operator Pod's resolver: no answer within 2 s\); looking again\.$/,
  );
  assert.equal(young.requeueAfterMs, CLUSTER_DNS_GRACE_MS - 10_000, "looks again when it ends");
  // Past the grace: Warning with a Warning Event; the same again: no new Event; back: Ready.
  const failing = { lookups: failedLookup(CLUSTER_DNS_GRACE_MS + 5_000) };
  const down = reconcileScaler(inputOf(w, failing));
  assert.equal(statusOf(down).state, "Warning");
  assert.equal(conditionOf(down, "Installed")?.reason, "ClusterDNSUnavailable");
  assert.deepEqual([down.apply, down.delete], [[], []], "nothing the user made, nothing of KEDA");
  const after = carryOut(w, down, { ready: false });
  assert.deepEqual(reconcileScaler(inputOf(after, failing)).events, []);
  const healed = reconcileScaler(inputOf(after, { lookups: resolvedLookup() }));
  assert.equal(statusOf(healed).state, "Ready");
  assert.deepEqual(healed.events.map((e) => [e.type, e.reason]), [["Normal", "Verified"]]);
});

Deno.test("Scaler: the aggregator's Warning comes first; a DNS Warning before its verification", () => {
  const w = installed();
  const failing = { lookups: failedLookup(CLUSTER_DNS_GRACE_MS) };
  const both = reconcileScaler(inputOf(withAggregator(w, MISSING_ENDPOINTS), failing));
  assert.equal(conditionOf(both, "Installed")?.reason, "MetricsAPIUnavailable");
  const young = withAggregator(w, { ...MISSING_ENDPOINTS, lastTransitionTime: ago(5_000) });
  const dns = reconcileScaler(inputOf(young, failing));
  assert.equal(conditionOf(dns, "Installed")?.reason, "ClusterDNSUnavailable");
  const neither = reconcileScaler(inputOf(young, { lookups: failedLookup(5_000) }));
  assert.match(conditionOf(neither, "Installed")!.message, /waiting for the aggregator/);
});

Deno.test("Scaler: the name looked up is the host KEDA's metrics server dials", () => {
  const dep = installed().installed.find((o) =>
    o.kind === "Deployment" && o.metadata.name === KEDA_DEPLOYMENTS.metricServer
  )!;
  assert.equal(dialedOperatorHost(dep), OPERATOR_HOST);
  const dialing = (address: string): KubeObject => ({
    ...dep,
    spec: {
      template: {
        spec: { containers: [{ args: ["--v=0", `--metrics-service-address=${address}`] }] },
      },
    },
  });
  assert.equal(
    dialedOperatorHost(dialing("Keda.NS.svc.example.org.:9666")),
    "keda.ns.svc.example.org",
  );
  assert.equal(dialedOperatorHost(dialing("dns:///keda.ns.svc:9666")), "keda.ns.svc");
  assert.equal(dialedOperatorHost(dialing("10.0.0.7:9666")), undefined, "an address: no DNS");
  assert.equal(dialedOperatorHost({ ...dep, spec: {} }), undefined);
});

Deno.test("Scaler: asked but not looked up yet, and a new leader during an outage", () => {
  const w = installed();
  const asking = { lookups: [ASKING] };
  // Shown Ready (a replica that just took over): nothing seen says otherwise, it stays Ready.
  assert.equal((w.object?.status as { state?: string } | undefined)?.state, "Ready");
  const kept = reconcileScaler(inputOf(w, asking));
  assert.equal(statusOf(kept).state, "Ready");
  assert.deepEqual(kept.events, []);
  // Not shown Ready (KEDA just rolled out): it waits for the operator's first lookup.
  const rolledOut = {
    ...w,
    object: { ...w.object!, status: { ...w.object!.status as object, state: "Processing" } },
  };
  const fresh = reconcileScaler(inputOf(rolledOut, asking));
  assert.equal(statusOf(fresh).state, "Processing");
  assert.match(
    conditionOf(fresh, "Installed")!.message,
    /^Verifying KEDA 2\.20\.2: the operator has not looked up keda-operator\.platform-system\.svc\.cluster\.local, the name KEDA's metrics server dials to reach KEDA's operator, yet\.$/,
  );
  // Shown ClusterDNSUnavailable: a new leader's first failed lookup keeps the Warning at once.
  const down = reconcileScaler(inputOf(w, { lookups: failedLookup(CLUSTER_DNS_GRACE_MS) }));
  const warned = carryOut(w, down, { ready: false });
  const young = reconcileScaler(inputOf(warned, { lookups: failedLookup(1_000) }));
  assert.equal(statusOf(young).state, "Warning");
  assert.equal(conditionOf(young, "Installed")?.reason, "ClusterDNSUnavailable");
  // (Its message gives the new leader's start of the failures: said again as a Warning Event.)
  assert.deepEqual(young.events.map((e) => [e.type, e.reason]), [
    ["Warning", "ClusterDNSUnavailable"],
  ]);
});
