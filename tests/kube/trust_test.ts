/**
 * The operator trusts the cluster's CA alone (src/kube/trust.ts): an API server certificate for the
 * same name from another CA is refused even when every other root Deno takes (the system store
 * through SSL_CERT_FILE, DENO_CERT, NODE_EXTRA_CA_CERTS) trusts that CA. Deno's root store belongs
 * to the process, so the operator runs as its own process, as `deno task start` runs it.
 */
import assert from "node:assert/strict";
import { ROOT_STORE_VARIABLES, trustingOnlyItsCa } from "../../src/kube/trust.ts";
import { OperatorProcess } from "../../tools/operator/process.ts";
import { type FakeServer, startServer } from "./fake_server.ts";
import { connectionTo, kubeconfigFor, RateLimit } from "./helpers.ts";
import { makePki } from "./pki.ts";
import { SimApi } from "./sim_api.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const pki = await makePki();
const otherCa = `${pki.dir}/other-ca.crt`;
/** Every way the process's root store would otherwise take the other CA. */
const OTHER_ROOTS = {
  DENO_TLS_CA_STORE: "system",
  SSL_CERT_FILE: otherCa,
  DENO_CERT: otherCa,
  NODE_EXTRA_CA_CERTS: otherCa,
};
const CLUSTER_CA = { "certificate-authority-data": btoa(pki.caCert) };

/** An API server without the RateLimit CRD, with the certificate `tls`; `close` stops both. */
async function apiServer(tls: { cert: string; key: string }): Promise<FakeServer> {
  const api = new SimApi();
  api.uninstall(RateLimit);
  const server = await startServer(api.handle, tls);
  const close = server.close;
  server.close = async () => {
    api.close();
    await close();
  };
  return server;
}

/** The operator's first error line against `server`, with the other CA in every other root. */
async function firstError(server: FakeServer, name: string): Promise<Record<string, unknown>> {
  const op = await OperatorProcess.start({
    kubeconfig: await kubeconfigFor(server.url, CLUSTER_CA),
    identity: name,
    logDir: `${pki.dir}/logs`,
    extraArgs: ["--controllers=ratelimit"],
    env: OTHER_ROOTS,
  });
  try {
    for (let i = 0; i < 300; i++) {
      const error = (await op.logLines()).find((l) => l.level === "error");
      if (error) return error;
      if (!op.running) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no error line from the operator:\n${await op.logTail()}`);
  } finally {
    await op.stop();
  }
}

Deno.test("only the cluster's CA: another CA's certificate for the same name is refused, though every other root trusts that CA", async () => {
  const impostor = await apiServer({ cert: pki.impostorCert, key: pki.impostorKey });
  const genuine = await apiServer({ cert: pki.serverCert, key: pki.serverKey });
  try {
    // The threat is real here: a Deno client given the cluster's CA accepts the impostor.
    const plain = await new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `const client = Deno.createHttpClient({ caCerts: [${JSON.stringify(pki.caCert)}] });
         const res = await fetch("${impostor.url}/api/v1/namespaces", { client });
         console.log(res.status);`,
      ],
      cwd: ROOT,
      env: OTHER_ROOTS,
    }).output();
    assert.equal(new TextDecoder().decode(plain.stdout).trim(), "200", "the other roots trust it");

    const refused = await firstError(impostor, "impostor");
    assert.equal(refused.check, "unreachable");
    assert.match(
      String(refused.msg),
      /fetch failed: .*invalid peer certificate: UnknownIssuer \(the server's certificate is not signed by the CA of kubeconfig .*\): check the address/,
    );
    assert.equal(impostor.seen.length, 1, "only the test's own request reached the impostor");

    const accepted = await firstError(genuine, "genuine");
    assert.equal(
      accepted.msg,
      "CRD ratelimits.gateway.platform-project.io is not installed: run kubectl apply -k deploy/",
    );
  } finally {
    await impostor.close();
    await genuine.close();
  }
});

Deno.test("the operator stops with one line when it may not set Deno's root store variables", async () => {
  const kubeconfig = await kubeconfigFor("https://127.0.0.1:1", CLUSTER_CA);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--frozen",
      "--no-prompt",
      "--allow-net",
      `--allow-read=${kubeconfig}`,
      "--allow-env=PLATFORM_OPERATOR_KUBECONFIG",
      "--ignore-env",
      "--allow-sys=hostname",
      "src/cli/operator_main.ts",
      "run",
      `--kubeconfig=${kubeconfig}`,
      "--probe-addr=0",
      "--metrics-addr=0",
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Without the check it would retry the unreachable server for ever.
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const out = await child.output().finally(() => clearTimeout(timer));
  const lines = new TextDecoder().decode(out.stderr).trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(out.code, 1);
  assert.deepEqual(lines.map((l) => l.msg), [
    "cannot limit trust to the cluster's CA: allow the variables DENO_TLS_CA_STORE, DENO_CERT, NODE_EXTRA_CA_CERTS (--allow-env)",
  ]);
});

Deno.test("the root store variables are cleared only while the client is made, and only for a connection with a CA", () => {
  const env = () => ROOT_STORE_VARIABLES.map((name) => Deno.env.get(name));
  const saved = env();
  try {
    Deno.env.set("DENO_TLS_CA_STORE", "system");
    Deno.env.set("DENO_CERT", otherCa);
    Deno.env.delete("NODE_EXTRA_CA_CERTS");
    const before = env();
    // No client is made here: this test process's own root store must not change.
    assert.deepEqual(
      trustingOnlyItsCa(connectionTo("https://x", { caCerts: [pki.caCert] }), env),
      ["", undefined, undefined],
    );
    assert.deepEqual(env(), before, "restored for exec credential plugins");
    assert.deepEqual(trustingOnlyItsCa(connectionTo("https://x"), env), before, "no CA: untouched");
  } finally {
    ROOT_STORE_VARIABLES.forEach((name, i) =>
      saved[i] === undefined ? Deno.env.delete(name) : Deno.env.set(name, saved[i])
    );
  }
});
