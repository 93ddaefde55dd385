// Its kubeconfigs are YAML, as kubectl writes them.
import "../../src/kube/kubeconfig_yaml.ts";
import assert from "node:assert/strict";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { ApiError } from "../../src/runtime/cluster.ts";
import { LiveCluster } from "../../src/kube/live_cluster.ts";
import { json, startServer, streamed } from "./fake_server.ts";
import { connectionTo, Pod } from "./helpers.ts";
import { makePki } from "./pki.ts";

const pki = await makePki();
const podList = {
  kind: "PodList",
  metadata: { resourceVersion: "7" },
  items: [{ metadata: { name: "p" } }],
};

function kubeconfig(
  server: string,
  user: Record<string, string>,
  cluster: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server, "certificate-authority": "ca.crt", ...cluster } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "ctx", context: { cluster: "c", user: "u", namespace: "team" } }],
    "current-context": "ctx",
  });
}

Deno.test("HTTPS with the cluster CA and a token from a kubeconfig file", async () => {
  const server = await startServer(() => json(podList), {
    cert: pki.serverCert,
    key: pki.serverKey,
  });
  const path = `${pki.dir}/token.kubeconfig`;
  await Deno.writeTextFile(path, kubeconfig(server.url, { token: "s3cret" }));
  const cluster = LiveCluster.connect({ kubeconfig: path });
  try {
    assert.equal(cluster.connection.namespace, "team");
    const page = await cluster.list(Pod);
    assert.equal(page.resourceVersion, "7");
    assert.equal(server.seen[0].headers.get("authorization"), "Bearer s3cret");
  } finally {
    cluster.close();
    await server.close();
  }
});

Deno.test("a server certificate from an untrusted CA is ApiError code 0", async () => {
  const server = await startServer(() => json(podList), {
    cert: pki.serverCert,
    key: pki.serverKey,
  });
  const cluster = new LiveCluster(connectionTo(server.url, { caCerts: [pki.otherCaCert] }));
  try {
    const err = await cluster.list(Pod).then(() => undefined, (e) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.code, 0);
    assert.equal(server.seen.length, 0);
  } finally {
    cluster.close();
    await server.close();
  }
});

Deno.test("client certificate authentication with certificate data from the kubeconfig", async () => {
  const subjects: (string | undefined)[] = [];
  const server = https.createServer(
    {
      key: pki.serverKey,
      cert: pki.serverCert,
      ca: pki.caCert,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const socket = req.socket as unknown as {
        getPeerCertificate(): { subject?: { CN?: string } };
      };
      subjects.push(socket.getPeerCertificate().subject?.CN);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(podList));
    },
  );
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const path = `${pki.dir}/cert.kubeconfig`;
  const b64 = (pem: string) => btoa(pem);
  await Deno.writeTextFile(
    path,
    kubeconfig(url, {
      "client-certificate-data": b64(pki.clientCert),
      "client-key-data": b64(pki.clientKey),
    }, {
      "certificate-authority": undefined,
      "certificate-authority-data": b64(pki.caCert),
    }),
  );
  const cluster = LiveCluster.connect({ kubeconfig: path });
  try {
    assert.equal((await cluster.list(Pod)).items[0].metadata.name, "p");
    assert.deepEqual(subjects, ["alice"]);
  } finally {
    cluster.close();
    await new Promise((ok) => server.close(ok));
  }
});

Deno.test("a watch over HTTPS streams events and a stall there is abortable", async () => {
  const open: ReturnType<typeof streamed>[] = [];
  const server = await startServer(() => {
    const s = streamed();
    open.push(s);
    s.send({
      type: "BOOKMARK",
      object: { kind: "Pod", apiVersion: "v1", metadata: { resourceVersion: "8" } },
    });
    return s.response;
  }, { cert: pki.serverCert, key: pki.serverKey });
  const cluster = new LiveCluster(connectionTo(server.url, { caCerts: [pki.caCert] }));
  try {
    const ctl = new AbortController();
    const types: string[] = [];
    for await (
      const event of cluster.watch(
        Pod,
        { resourceVersion: "7", allowWatchBookmarks: true },
        ctl.signal,
      )
    ) {
      types.push(event.type);
      setTimeout(() => ctl.abort(), 20);
    }
    assert.deepEqual(types, ["BOOKMARK"]);
  } finally {
    open.forEach((s) => s.end());
    cluster.close();
    await server.close();
  }
});
