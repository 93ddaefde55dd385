// Its kubeconfigs are YAML, as kubectl writes them.
import "../../src/kube/kubeconfig_yaml.ts";
import assert from "node:assert/strict";
import { TokenFile } from "../../src/kube/credentials.ts";
import { ConfigError, loadConnection, SERVICE_ACCOUNT_DIR } from "../../src/kube/config.ts";
import { LiveCluster } from "../../src/kube/live_cluster.ts";
import { json, startServer } from "./fake_server.ts";
import { Pod } from "./helpers.ts";

const ENV = ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"];

/** Runs `fn` with the in-cluster variables set, restoring them after. */
async function withEnv(values: Record<string, string>, fn: () => Promise<void>): Promise<void> {
  const saved = Object.fromEntries(ENV.map((k) => [k, Deno.env.get(k)]));
  try {
    for (const k of ENV) {
      if (values[k] === undefined) Deno.env.delete(k);
      else Deno.env.set(k, values[k]);
    }
    await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      v === undefined ? Deno.env.delete(k) : Deno.env.set(k, v);
    }
  }
}

function kubeconfig(contexts: Record<string, string>, current: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: Object.entries(contexts).map(([name, server]) => ({ name, cluster: { server } })),
    users: [{ name: "u", user: { token: "t" } }],
    contexts: Object.keys(contexts).map((name) => ({
      name,
      context: { cluster: name, user: "u" },
    })),
    "current-context": current,
  });
}

Deno.test("in-cluster: service host and port, namespace file, and a token re-read when it rotates", async () => {
  const server = await startServer(() => json({ items: [], metadata: { resourceVersion: "1" } }));
  const root = await Deno.makeTempDir();
  const dir = `${root}${SERVICE_ACCOUNT_DIR}`;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(`${dir}/token`, "first-token\n");
  await Deno.writeTextFile(`${dir}/namespace`, "platform-system");
  await Deno.writeTextFile(`${dir}/ca.crt`, "");
  const port = new URL(server.url).port;
  await withEnv(
    { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: port },
    async () => {
      const conn = loadConnection({ inClusterRoot: root, home: "/nonexistent" });
      assert.equal(conn.source, "in-cluster service account");
      assert.equal(conn.namespace, "platform-system");
      // Port 8080 and friends are plain HTTP in client-node's in-cluster rules; others are HTTPS.
      assert.equal(conn.server, `https://127.0.0.1:${port}`);
      const cluster = new LiveCluster({ ...conn, server: server.url, caCerts: [] });
      try {
        await cluster.list(Pod);
        // The kubelet replaces the file: a new inode, size and mtime.
        await Deno.writeTextFile(`${dir}/token.new`, "second-token-longer\n");
        await Deno.rename(`${dir}/token.new`, `${dir}/token`);
        await cluster.list(Pod);
        assert.deepEqual(server.seen.map((r) => r.headers.get("authorization")), [
          "Bearer first-token",
          "Bearer second-token-longer",
        ]);
      } finally {
        cluster.close();
        await server.close();
      }
    },
  );
});

Deno.test("a 401 makes the token file be read again and the request retried once", async () => {
  const root = await Deno.makeTempDir();
  const tokens = new TokenFile(`${root}/token`);
  await Deno.writeTextFile(`${root}/token`, "old");
  const server = await startServer((req) =>
    req.headers.get("authorization") === "Bearer new"
      ? json({ items: [], metadata: { resourceVersion: "1" } })
      : json({ kind: "Status", code: 401, reason: "Unauthorized", message: "Unauthorized" }, 401)
  );
  const cluster = new LiveCluster({
    server: server.url,
    caCerts: [],
    skipTLSVerify: false,
    credentials: tokens,
    source: "test",
    warnings: [],
  });
  try {
    // The file has not changed, so the retry sends the same token and the 401 stands.
    await cluster.list(Pod).then(
      () => assert.fail("expected 401"),
      (e) => assert.equal(e.code, 401),
    );
    assert.equal(server.seen.length, 2, "one retry after the 401");
    // Same size, maybe the same mtime: the stat or else the 401 retry must pick up the new token.
    await Deno.writeTextFile(`${root}/token`, "new");
    const page = await cluster.list(Pod);
    assert.equal(page.resourceVersion, "1");
  } finally {
    cluster.close();
    await server.close();
  }
});

Deno.test("kubeconfig: current context, --context override, KUBECONFIG-style lists", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/a`,
    kubeconfig({ one: "https://one.example:6443/", two: "https://two.example" }, "one"),
  );
  await Deno.writeTextFile(`${dir}/b`, kubeconfig({ three: "http://127.0.0.1:8001" }, "three"));
  await withEnv({}, () => {
    assert.equal(loadConnection({ kubeconfig: `${dir}/a` }).server, "https://one.example:6443");
    const two = loadConnection({ kubeconfig: `${dir}/a`, context: "two" });
    assert.equal(two.server, "https://two.example");
    assert.match(two.source, /context two/);
    const merged = loadConnection({
      kubeconfig: `${dir}/a:${dir}/b`,
      context: "three",
      allowInsecureHttp: true,
    });
    assert.equal(merged.server, "http://127.0.0.1:8001");
    return Promise.resolve();
  });
});

Deno.test("a plain-HTTP API server is refused, naming the flag, unless --allow-insecure-http", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/k`, kubeconfig({ plain: "http://127.0.0.1:8001" }, "plain"));
  const root = await Deno.makeTempDir();
  await Deno.mkdir(`${root}${SERVICE_ACCOUNT_DIR}`, { recursive: true });
  await Deno.writeTextFile(`${root}${SERVICE_ACCOUNT_DIR}/token`, "t");
  await Deno.writeTextFile(`${root}${SERVICE_ACCOUNT_DIR}/ca.crt`, "");
  const refused =
    /is plain HTTP, so its credentials and every object would cross the network unencrypted: use an https:\/\/ server, or run with --allow-insecure-http \(PLATFORM_OPERATOR_ALLOW_INSECURE_HTTP=true\)/;
  await withEnv({ KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "8080" }, () => {
    for (const where of [{ kubeconfig: `${dir}/k` }, { inClusterRoot: root }]) {
      assert.throws(
        () => loadConnection(where),
        (e) => e instanceof ConfigError && refused.test(e.message),
      );
      const allowed = loadConnection({ ...where, allowInsecureHttp: true });
      assert.match(allowed.server, /^http:\/\//);
      assert.match(
        allowed.warnings.join("\n"),
        /is plain HTTP \(allowed by --allow-insecure-http\)/,
      );
    }
    // HTTPS needs no flag and warns about nothing.
    Deno.env.set("KUBERNETES_SERVICE_PORT", "6443");
    assert.deepEqual(loadConnection({ inClusterRoot: root }).warnings, []);
    return Promise.resolve();
  });
});

Deno.test("unusable configurations give a ConfigError that says what to do", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/a`, kubeconfig({ one: "https://one.example" }, "one"));
  await withEnv({}, () => {
    assert.throws(
      () => loadConnection({ kubeconfig: `${dir}/a`, context: "nope" }),
      (e) =>
        e instanceof ConfigError && /context nope is not in .* \(contexts: one\)/.test(e.message),
    );
    assert.throws(
      () => loadConnection({ kubeconfig: `${dir}/missing` }),
      (e) =>
        e instanceof ConfigError &&
        /does not exist: set --kubeconfig or KUBECONFIG/.test(e.message),
    );
    assert.throws(
      () => loadConnection({ home: dir }),
      (e) => e instanceof ConfigError && /no Kubernetes configuration found/.test(e.message),
    );
    return Promise.resolve();
  });
});

Deno.test("insecure-skip-tls-verify is reported as a warning saying how to honour it", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/k`,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "c",
        cluster: { server: "https://10.0.0.1:6443", "insecure-skip-tls-verify": true },
      }],
      users: [{ name: "u", user: { username: "admin", password: "pw" } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  const conn = loadConnection({ kubeconfig: `${dir}/k` });
  assert.equal(conn.skipTLSVerify, true);
  assert.match(conn.warnings.join("\n"), /--unsafely-ignore-certificate-errors=10\.0\.0\.1/);
  assert.deepEqual(await conn.credentials.headers(), {
    authorization: `Basic ${btoa("admin:pw")}`,
  });
});
