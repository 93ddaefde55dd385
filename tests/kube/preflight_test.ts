import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { Cluster } from "../../src/runtime/cluster.ts";
import { recordFirstLists } from "../../src/kube/first_lists.ts";
import { preflight, type PreflightOptions } from "../../src/kube/preflight.ts";
import { discoveryChecks } from "../../src/kube/istiod_endpoints.ts";
import { LiveCluster } from "../../src/kube/live_cluster.ts";
import { json, type Seen, status } from "./fake_server.ts";
import { connectionTo, withCluster } from "./helpers.ts";

const base = (server: string): PreflightOptions => ({
  types: [
    { type: RESOURCES.RateLimit },
    { type: RESOURCES.Pod },
    { type: RESOURCES.EnvoyFilter, optional: true },
    { type: RESOURCES.Serverless },
  ],
  alsoUses: [RESOURCES.Event, RESOURCES.Lease],
  leaseNamespace: "platform-system",
  server,
  source: "test kubeconfig",
});

/**
 * An API server where `missing` collections 404 and `deny(attributes)` access reviews are refused.
 * Its rules reviews are incomplete, as with a webhook authorizer: every access is reviewed alone
 * (self_access_test.ts has the rules).
 */
function apiServer(
  missing: string[],
  deny: (attrs: Record<string, string>) => boolean = () => false,
) {
  return (req: Seen) => {
    if (req.method === "POST" && req.path.endsWith("/selfsubjectrulesreviews")) {
      const review = JSON.parse(req.body);
      return json({ ...review, status: { resourceRules: [], incomplete: true } }, 201);
    }
    if (req.method === "POST" && req.path.endsWith("/selfsubjectaccessreviews")) {
      const review = JSON.parse(req.body);
      return json({ ...review, status: { allowed: !deny(review.spec.resourceAttributes) } }, 201);
    }
    if (missing.some((m) => req.path.endsWith(`/${m}`))) {
      return status(404, "NotFound", "the server could not find the requested resource");
    }
    return json({ items: [], metadata: { resourceVersion: "1" } });
  };
}

/** The attributes of every access review `seen`. */
function accessReviews(seen: Seen[]): Record<string, string>[] {
  return seen.filter((r) => r.method === "POST" && r.path.endsWith("/selfsubjectaccessreviews"))
    .map((r) => JSON.parse(r.body).spec.resourceAttributes);
}

Deno.test("preflight passes when every CRD is there and every verb is allowed", async () => {
  await withCluster(apiServer([]), async (cluster, server) => {
    assert.deepEqual(await preflight(cluster, base(server.url)), []);
    const reviews = accessReviews(server.seen);
    // Status by apply, finalizers for owner references, leases in the lease namespace only.
    assert.ok(
      reviews.some((a) =>
        a.resource === "ratelimits" && a.subresource === "status" && a.verb === "patch"
      ),
    );
    assert.ok(
      reviews.some((a) =>
        a.resource === "leases" && a.namespace === "platform-system" && a.verb === "update"
      ),
    );
    assert.ok(reviews.some((a) => a.resource === "events" && a.verb === "create" && !a.namespace));
    assert.ok(reviews.every((a) => a.resource !== "leases" || a.namespace === "platform-system"));
  });
});

Deno.test("missing CRDs are one problem naming them all and saying how to install them", async () => {
  await withCluster(
    apiServer(["ratelimits", "serverlesses", "envoyfilters"]),
    async (cluster, server) => {
      const problems = await preflight(cluster, base(server.url));
      assert.deepEqual(problems, [{
        kind: "crd-missing",
        message:
          "CRD ratelimits.gateway.platform-project.io, serverlesses.operator.platform-project.io are not installed: run kubectl apply -k deploy/",
      }]);
    },
  );
});

Deno.test("a missing Istio CRD that is required says to install Istio", async () => {
  await withCluster(apiServer(["envoyfilters"]), async (cluster, server) => {
    const opts = { ...base(server.url), types: [{ type: RESOURCES.EnvoyFilter }] };
    const [problem] = await preflight(cluster, opts);
    assert.equal(problem.kind, "crd-missing");
    assert.match(
      problem.message,
      /^CRD envoyfilters\.networking\.istio\.io is not installed: install Istio/,
    );
  });
});

Deno.test("a missing CRD's reviews are not reported, a type named twice is probed once, required if either says so", async () => {
  const deny = (a: Record<string, string>) => a.resource === "ratelimits" || a.verb === "update";
  await withCluster(apiServer(["ratelimits"], deny), async (cluster, server) => {
    const opts = base(server.url);
    opts.types = [...opts.types, { type: RESOURCES.RateLimit, optional: true }];
    const problems = await preflight(cluster, opts);
    assert.deepEqual(problems.map((p) => p.kind), ["crd-missing", "forbidden"]);
    assert.match(problems[0].message, /^CRD ratelimits\.gateway\.platform-project\.io is not/);
    assert.doesNotMatch(problems[1].message, /ratelimits/);
    assert.match(problems[1].message, /update leases\.coordination\.k8s\.io/);
    const probes = server.seen.filter((r) => r.method === "GET" && r.path.includes("/ratelimits"));
    assert.equal(probes.length, 1);
  });
});

Deno.test("the lists' first answers stand for probes: a type listed is not probed again, its 404 is a missing CRD", async () => {
  await withCluster(apiServer(["ratelimits"]), async (cluster, server) => {
    // As a manager lists: the RateLimits' first page 404s, the Pods' is answered; nothing else
    // was listed, so the rest is probed.
    const { cluster: recording, answer } = recordFirstLists(cluster);
    await recording.list(RESOURCES.RateLimit, { limit: 500 }).catch(() => {});
    await recording.list(RESOURCES.Pod, { limit: 500 });
    const before = server.seen.length;
    const problems = await preflight(cluster, { ...base(server.url), listed: answer });
    assert.deepEqual(problems.map((p) => p.kind), ["crd-missing"]);
    assert.match(problems[0].message, /^CRD ratelimits\.gateway\.platform-project\.io is not/);
    const probed = server.seen.slice(before).filter((r) => r.method === "GET").map((r) => r.path);
    assert.ok(!probed.some((p) => p.endsWith("/ratelimits") || p.endsWith("/pods")), `${probed}`);
    assert.ok(probed.some((p) => p.endsWith("/serverlesses")), `${probed}`);
  });
});

Deno.test("forbidden verbs are one problem listing each resource and verb", async () => {
  const deny = (a: Record<string, string>) =>
    (a.resource === "pods" && a.verb === "watch") ||
    (a.resource === "leases" && a.verb !== "get") ||
    (a.resource === "ratelimits" && a.subresource === "status");
  await withCluster(apiServer([], deny), async (cluster, server) => {
    const problems = await preflight(cluster, base(server.url));
    assert.equal(problems.length, 1);
    assert.equal(problems[0].kind, "forbidden");
    assert.match(problems[0].message, /^RBAC forbids the operator to /);
    assert.match(problems[0].message, /watch pods(;|:)/);
    assert.match(problems[0].message, /patch ratelimits\.gateway\.platform-project\.io\/status/);
    assert.match(
      problems[0].message,
      /list,watch,create,update,delete leases\.coordination\.k8s\.io in namespace platform-system/,
    );
    assert.match(problems[0].message, /run kubectl apply -k deploy\//);
  });
});

Deno.test("an unreachable API server or rejected credentials stop the checks with one problem", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${(probe.addr as Deno.NetAddr).port}`;
  probe.close();
  const down = new LiveCluster(connectionTo(url));
  const problems = await preflight(down, base(url));
  down.close();
  assert.equal(problems.length, 1);
  assert.equal(problems[0].kind, "unreachable");
  assert.match(
    problems[0].message,
    new RegExp(`^cannot reach the API server ${url} \\(test kubeconfig\\): .*check the address`),
  );

  await withCluster(() => status(401, "Unauthorized", "Unauthorized"), async (cluster, server) => {
    const [p] = await preflight(cluster, base(server.url));
    assert.equal(p.kind, "unauthorized");
    assert.match(
      p.message,
      /rejected the credentials of test kubeconfig \(401\): refresh the kubeconfig/,
    );
  });
});

Deno.test("with nothing granted the line stays short and the details name every resource", async () => {
  await withCluster(apiServer([], () => true), async (cluster, server) => {
    const [problem] = await preflight(cluster, base(server.url));
    assert.equal(problem.kind, "forbidden");
    const resources = new Set(
      accessReviews(server.seen).map((a) =>
        `${a.resource}/${a.subresource ?? ""}/${a.namespace ?? ""}`
      ),
    );
    assert.equal(problem.details?.length, resources.size);
    assert.match(
      problem.message,
      new RegExp(`and ${resources.size - 4} more resources: run kubectl apply -k deploy/`),
    );
    assert.equal(problem.message.split("; ").length, 4);
  });
});

Deno.test("preflight sends its probes and reviews at once, never more than `parallel` of each in flight", async () => {
  const inFlight = { probe: 0, review: 0 };
  const most = { probe: 0, review: 0 };
  const reviews: string[] = [];
  let probesAnswered = 0;
  let probesAnsweredAtFirstReview = -1;
  const slow = async <T>(kind: "probe" | "review", value: T): Promise<T> => {
    most[kind] = Math.max(most[kind], ++inFlight[kind]);
    await new Promise((r) => setTimeout(r, 1));
    inFlight[kind]--;
    return value;
  };
  type Review = { spec: { resourceAttributes?: Record<string, string>; namespace?: string } };
  const cluster = {
    list: () => slow("probe", { items: [], resourceVersion: "1" }).finally(() => probesAnswered++),
    create: (_t: unknown, review: Review) => {
      const a = review.spec.resourceAttributes;
      if (!a) return slow("review", { ...review, status: { resourceRules: [], incomplete: true } });
      if (reviews.length === 0) probesAnsweredAtFirstReview = probesAnswered;
      reviews.push(`${a.verb} ${a.resource}`);
      return slow("review", {
        ...review,
        status: { allowed: !(a.resource === "pods" && a.verb === "watch") },
      });
    },
  } as unknown as Cluster;
  const problems = await preflight(cluster, { ...base("https://x"), parallel: 3 });
  assert.deepEqual(most, { probe: 3, review: 3 }, "three of each at a time");
  assert.ok(
    probesAnsweredAtFirstReview < probesAnswered,
    `the reviews began with ${probesAnsweredAtFirstReview} of ${probesAnswered} probes answered`,
  );
  assert.ok(reviews.length > 10, `${reviews.length} reviews`);
  assert.equal(problems.length, 1);
  assert.match(problems[0].message, /watch pods/);
});

Deno.test("access beyond the ClusterRole (istiod's EndpointSlices) is reviewed in its namespace and says what grants it", async () => {
  const denyDiscovery = (a: Record<string, string>) => a.resource === "endpointslices";
  await withCluster(apiServer([], denyDiscovery), async (cluster, server) => {
    const opts = {
      ...base(server.url),
      alsoChecks: discoveryChecks([{ namespace: "istio-system", name: "istiod" }]),
    };
    const problems = await preflight(cluster, opts);
    assert.equal(problems.length, 1);
    assert.equal(
      problems[0].message,
      "RBAC forbids the operator to list,watch endpointslices.discovery.k8s.io in namespace istio-system: " +
        "apply deploy/istiod's Role platform-operator-istiod in namespace istio-system (docs/operations.md, Asking istiod)",
    );
    const asked = accessReviews(server.seen).filter((a) => a.resource === "endpointslices");
    assert.deepEqual(asked.map((a) => `${a.verb} ${a.group} ${a.namespace}`).sort(), [
      "list discovery.k8s.io istio-system",
      "watch discovery.k8s.io istio-system",
    ]);
  });
  // Granted: no problem. Without the flag nothing of it is asked.
  await withCluster(apiServer([]), async (cluster, server) => {
    const opts = {
      ...base(server.url),
      alsoChecks: discoveryChecks([{ namespace: "istio-system", name: "istiod" }]),
    };
    assert.deepEqual(await preflight(cluster, opts), []);
  });
  await withCluster(apiServer([]), async (cluster, server) => {
    assert.deepEqual(
      await preflight(cluster, { ...base(server.url), alsoChecks: discoveryChecks([]) }),
      [],
    );
    assert.ok(!accessReviews(server.seen).some((a) => a.resource === "endpointslices"));
  });
});
