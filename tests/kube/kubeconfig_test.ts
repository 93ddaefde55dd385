// Its kubeconfigs are YAML, as kubectl writes them.
import "../../src/kube/kubeconfig_yaml.ts";
import assert from "node:assert/strict";
import { ConfigError, loadConnection } from "../../src/kube/config.ts";
import { mergeKubeconfigs, parseKubeconfig } from "../../src/kube/kubeconfig.ts";
import { readSmallFile, readSmallFileSync } from "../../src/kube/bounded_read.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** A kubeconfig with one context `name` on cluster and user of the same name. */
function config(
  name: string,
  cluster: Record<string, unknown>,
  user: Record<string, unknown>,
  current?: string,
): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [{ name, context: { cluster: name, user: name, namespace: `ns-${name}` } }],
    ...(current ? { "current-context": current } : {}),
  });
}

const b64 = (s: string) => btoa(s);

Deno.test("kubeconfig lists: the first file to name a cluster, user or context wins, and the first current-context", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/a`, config("shared", { server: "https://a" }, { token: "a" }));
  await Deno.writeTextFile(
    `${dir}/b`,
    config("shared", { server: "https://b" }, { token: "b" }, "shared"),
  );
  await Deno.writeTextFile(`${dir}/c`, config("other", { server: "https://c" }, {}, "other"));
  // a has no current-context: b's is used; a's entries win over b's of the same name.
  const conn = loadConnection({ kubeconfig: `${dir}/a:${dir}/b:${dir}/c` });
  assert.equal(conn.server, "https://a");
  assert.equal(conn.namespace, "ns-shared");
  assert.deepEqual(await conn.credentials.headers(), { authorization: "Bearer a" });
  assert.match(conn.source, /context shared/);
  // Reversed, b's entries win and c's current-context is not used (b's comes first).
  const reversed = loadConnection({ kubeconfig: `${dir}/b:${dir}/a:${dir}/c` });
  assert.equal(reversed.server, "https://b");
  // Entries of later files are still reachable with --context.
  assert.equal(
    loadConnection({ kubeconfig: `${dir}/a:${dir}/b:${dir}/c`, context: "other" }).server,
    "https://c",
  );
});

Deno.test("kubeconfig: file references are relative to the directory of the file that names them", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/sub/pki`, { recursive: true });
  await Deno.writeTextFile(`${dir}/sub/pki/ca.crt`, "CA FROM FILE");
  await Deno.writeTextFile(`${dir}/sub/pki/client.crt`, "CERT FROM FILE");
  await Deno.writeTextFile(`${dir}/sub/pki/client.key`, "KEY FROM FILE");
  await Deno.writeTextFile(`${dir}/sub/token`, "token-from-file\n");
  await Deno.writeTextFile(
    `${dir}/sub/kubeconfig`,
    config("x", { server: "https://x", "certificate-authority": "pki/ca.crt" }, {
      "client-certificate": "pki/client.crt",
      "client-key": "./pki/client.key",
      tokenFile: "token",
    }, "x"),
  );
  // Listed first from another directory: paths still resolve against sub/.
  await Deno.writeTextFile(`${dir}/empty`, "");
  const conn = loadConnection({ kubeconfig: `${dir}/empty:${dir}/sub/kubeconfig` });
  assert.deepEqual(conn.caCerts, ["CA FROM FILE"]);
  assert.equal(conn.clientCert, "CERT FROM FILE");
  assert.equal(conn.clientKey, "KEY FROM FILE");
  assert.deepEqual(await conn.credentials.headers(), { authorization: "Bearer token-from-file" });
  const parsed = parseKubeconfig(
    config("y", { server: "https://y", "certificate-authority": "/abs/ca" }, {}),
    "/etc/k/config",
  );
  assert.equal(parsed.clusters.get("y")?.["certificate-authority"], "/abs/ca");
});

Deno.test("kubeconfig: -data fields win over files, and a missing file is a ConfigError naming it", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/k`,
    config("x", {
      server: "https://x/",
      "certificate-authority": "missing-ca.crt",
      "certificate-authority-data": b64("CA DATA"),
      "tls-server-name": "api.internal",
    }, {
      "client-certificate-data": b64("CERT DATA"),
      "client-key-data": b64("KEY DATA"),
      "client-key": "missing.key",
    }, "x"),
  );
  const conn = loadConnection({ kubeconfig: `${dir}/k` });
  assert.equal(conn.server, "https://x");
  assert.deepEqual(conn.caCerts, ["CA DATA"]);
  assert.equal(conn.clientCert, "CERT DATA");
  assert.equal(conn.clientKey, "KEY DATA");
  assert.deepEqual(await conn.credentials.headers(), {});
  assert.match(conn.warnings.join("\n"), /tls-server-name api\.internal is ignored/);
  await Deno.writeTextFile(
    `${dir}/bad`,
    config("x", { server: "https://x", "certificate-authority": "nope.crt" }, {}, "x"),
  );
  assert.throws(
    () => loadConnection({ kubeconfig: `${dir}/bad` }),
    (e) =>
      e instanceof ConfigError &&
      e.message.includes(`cannot read the certificate authority ${dir}/nope.crt`),
  );
});

Deno.test("kubeconfig: no current-context, a context naming no cluster, and YAML that does not parse", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/nocurrent`, config("x", { server: "https://x" }, {}));
  assert.throws(
    () => loadConnection({ kubeconfig: `${dir}/nocurrent` }),
    (e) => e instanceof ConfigError && /has no current-context: pass --context/.test(e.message),
  );
  await Deno.writeTextFile(
    `${dir}/dangling`,
    "contexts:\n- name: d\n  context: {cluster: gone, user: u}\ncurrent-context: d\n",
  );
  assert.throws(
    () => loadConnection({ kubeconfig: `${dir}/dangling` }),
    (e) => e instanceof ConfigError && /the current context has no cluster/.test(e.message),
  );
  await Deno.writeTextFile(`${dir}/broken`, "clusters: [\n");
  assert.throws(
    () => loadConnection({ kubeconfig: `${dir}/broken` }),
    (e) =>
      e instanceof ConfigError && e.message.startsWith(`kubeconfig ${dir}/broken cannot be read`),
  );
  // YAML proper (not only JSON), with an impersonated basic-auth user.
  await Deno.writeTextFile(
    `${dir}/yaml`,
    [
      "clusters:",
      "- name: c",
      "  cluster: {server: 'https://127.0.0.1:8001'}",
      "users:",
      "- name: u",
      "  user: {username: admin, password: pw, as: someone}",
      "contexts:",
      "- name: x",
      "  context: {cluster: c, user: u}",
      "current-context: x",
    ].join("\n"),
  );
  assert.deepEqual(await loadConnection({ kubeconfig: `${dir}/yaml` }).credentials.headers(), {
    authorization: `Basic ${b64("admin:pw")}`,
    "impersonate-user": "someone",
  });
  assert.equal(mergeKubeconfigs([]).currentContext, undefined);
});

Deno.test("kubeconfig: an exec user gets its token from client-node's exec authenticator", async () => {
  const dir = await Deno.makeTempDir();
  const credential = JSON.stringify({
    apiVersion: "client.authentication.k8s.io/v1",
    kind: "ExecCredential",
    status: { token: "exec-token" },
  });
  await Deno.writeTextFile(
    `${dir}/k`,
    config("x", { server: "https://x" }, {
      exec: {
        apiVersion: "client.authentication.k8s.io/v1",
        command: "/bin/sh",
        args: ["-c", `echo '${credential}'`],
        interactiveMode: "Never",
      },
    }, "x"),
  );
  const conn = loadConnection({ kubeconfig: `${dir}/k` });
  assert.deepEqual(await conn.credentials.headers(), { authorization: "Bearer exec-token" });
});

Deno.test("the operator's static module graph has no client-node, yaml or Node module", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--frozen", `${ROOT}src/cli/operator_main.ts`],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: {
      specifier: string;
      dependencies?: { specifier: string; code?: { specifier?: string }; isDynamic?: boolean }[];
    }[];
  };
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const stack = [info.modules.find((m) => m.specifier.endsWith("src/cli/operator_main.ts"))!];
  let dynamicUse = false;
  while (stack.length) {
    const m = stack.pop()!;
    if (seen.has(m.specifier)) continue;
    seen.add(m.specifier);
    for (const d of m.dependencies ?? []) {
      if (d.specifier.includes("@kubernetes/client-node")) {
        assert.ok(d.isDynamic, `${m.specifier} imports client-node statically`);
        dynamicUse = true;
        continue;
      }
      // Each costs memory for as long as the operator runs (yaml and Node's compatibility layer
      // about 15 MB, bench/RESULTS.md); a YAML kubeconfig loads the parser when it meets one.
      assert.ok(
        d.isDynamic || (d.specifier !== "yaml" && !d.specifier.startsWith("node:")),
        `${m.specifier} imports ${d.specifier} statically`,
      );
      const next = d.code?.specifier && bySpecifier.get(d.code.specifier);
      if (next && !d.isDynamic) stack.push(next);
    }
  }
  assert.ok(seen.size > 10, "the walk reached the operator's modules");
  assert.ok(dynamicUse, "client-node is still imported dynamically for exec users");
});

Deno.test("kubeconfig: a device or an oversized file is refused, not read until memory runs out", async () => {
  // /dev/zero never ends: read whole, it took all of a 24 GB machine's memory.
  assert.throws(
    () => loadConnection({ kubeconfig: "/dev/zero" }),
    (e) =>
      e instanceof Error &&
      e.message.includes(
        "kubeconfig /dev/zero cannot be read: /dev/zero has more than 16777216 bytes",
      ),
  );
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/k`,
    config("x", { server: "https://x", "certificate-authority": "/dev/zero" }, {}, "x"),
  );
  assert.throws(
    () => loadConnection({ kubeconfig: `${dir}/k` }),
    (e) =>
      e instanceof ConfigError &&
      e.message.includes(
        "cannot read the certificate authority /dev/zero: /dev/zero has more than",
      ),
  );
  // The bound is the reader's: a small file reads as Deno.readTextFile reads it.
  await Deno.writeTextFile(`${dir}/t`, "token é\n");
  assert.equal(readSmallFileSync(`${dir}/t`), "token é\n");
  assert.equal(await readSmallFile(`${dir}/t`), "token é\n");
  await assert.rejects(() => readSmallFile("/dev/zero", 1000), /has more than 1000 bytes/);
});
