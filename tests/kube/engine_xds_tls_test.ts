/**
 * TLS between the rate limit engines and the operator's xDS server (src/kube/engine_xds.ts with
 * `tls`, src/kube/engine_xds_tls.ts; the engines' side rendered by src/reconcile/engine/xds_tls.ts),
 * with REAL engines (envoyproxy/ratelimit built here) configured by the very variables the
 * operator renders into their Deployment (only the files' directory moved to a temporary one):
 *
 * - engines given the CA that signed the operator's certificate and a client certificate load the
 *   snapshot over TLS, and the server knows each by its certificate's subject;
 * - an engine given another CA, one that requires another name (SAN) of the server, one without
 *   a client certificate, one whose client certificate another CA signed, and one in cleartext
 *   load nothing, and GlobalEnforced's read-back of their `/rlconfig` says DomainNotLoaded;
 * - a certificate rotated on disk is served to new connections without a restart while the open
 *   streams go on (an edit still reaches them); files that cannot serve are logged and the
 *   certificate served before stays;
 * - files that cannot serve at start are refused naming the flag and the file.
 *
 * Needs the engine built (./deno task build --only=ratelimit-engine), redis-server and openssl.
 */
import assert from "node:assert/strict";
import http2 from "node:http2";
import { join } from "node:path";
import {
  type Engine,
  ensureRatelimitEngine,
  startEngine,
  startRedis,
  startTestClient,
  xdsSource,
} from "../../tools/ratelimit-engine/mod.ts";
import { generatePki, issueCert } from "../../tools/cluster/pki.ts";
import {
  ADS_PATH,
  EngineXdsServer,
  serveEngineConfig,
  type XdsServingFiles,
  XdsTlsError,
} from "../../src/kube/engine_xds.ts";
import { readXdsTls } from "../../src/kube/engine_xds_tls.ts";
import { rlconfigLines, snapshotOf } from "../../src/reconcile/ratelimit/engine_config.ts";
import {
  DEFAULT_ENGINE_RESOURCES,
  engineEnv,
  type EngineSettings,
  readRedisSecret,
  XDS_TLS_DIR,
  XDS_TLS_SECRET_KEYS,
  type XdsTlsFiles as EngineTlsFiles,
} from "../../src/reconcile/engine/mod.ts";
import { parseRlconfig } from "../../src/api/engine_status.ts";
import type { EngineObservation } from "../../src/reconcile/ratelimit/input.ts";
import { globalEnforcement, inForceOf } from "../../src/reconcile/ratelimit/status.ts";
import { reachOf } from "../../src/reconcile/ratelimit/scope.ts";
import { systemClock } from "../../src/runtime/mod.ts";
import { runOperator } from "../../src/cli/run.ts";
import { parseRunFlags } from "../../src/cli/run_flags.ts";
import { startServer } from "./fake_server.ts";
import { kubeconfigFor } from "./helpers.ts";
import { SimApi } from "./sim_api.ts";
import {
  apiLimits,
  filterOf,
  limitOf,
  linesOfDomain,
  rateLimitOf,
  requestOf,
  sleep,
  testLog,
  until,
  untilAnswering,
} from "./engine_xds_helpers.ts";

/** The engines' settings as the operator has them with --global-engine-xds-tls-secret. */
const SETTINGS: EngineSettings = {
  secret: { namespace: "platform-ratelimit", name: "redis" },
  image: "engine:test",
  replicas: 2,
  resources: DEFAULT_ENGINE_RESOURCES,
  operatorNamespace: "platform-system",
  xdsTls: {
    secret: { namespace: "platform-ratelimit", name: "engine-xds-tls" },
    clientCertRequired: true,
  },
};

/** The name the engines require of the operator's certificate: the xDS Service's, as rendered. */
const SERVER_NAME = "platform-operator-xds.platform-system.svc";

/**
 * The xDS TLS variables the operator renders for an engine Pod, the Secret's files at `dir`
 * instead of XDS_TLS_DIR; `override` changes or (undefined) drops some.
 */
function renderedTlsEnv(
  dir: string,
  files: EngineTlsFiles,
  override: Record<string, string | undefined> = {},
): Record<string, string> {
  const redis = readRedisSecret({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "redis", namespace: "platform-ratelimit" },
    data: { address: btoa("127.0.0.1:6379") },
  });
  assert.ok(redis.ok);
  const out: Record<string, string> = {};
  for (const e of engineEnv(SETTINGS, redis.connection, files)) {
    const { name, value } = e as { name: string; value?: string };
    if (!name.startsWith("CONFIG_GRPC_XDS_") || name === "CONFIG_GRPC_XDS_SERVER_URL") continue;
    if (value !== undefined) out[name] = value.replace(XDS_TLS_DIR, dir);
  }
  for (const [k, v] of Object.entries(override)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** Writes an engine's Secret volume: `ca.crt` and, when given, `tls.crt` and `tls.key`. */
async function secretVolume(
  dir: string,
  ca: string,
  client?: { cert: string; key: string },
): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  const k = XDS_TLS_SECRET_KEYS;
  await Deno.copyFile(ca, join(dir, k.caCert));
  if (client) {
    await Deno.copyFile(client.cert, join(dir, k.clientCert));
    await Deno.copyFile(client.key, join(dir, k.clientKey));
  }
  return dir;
}

/**
 * The operator's mounted Secret as the kubelet keeps it: `<dir>/current` a symlink to a version
 * directory, swapped atomically (rename) to rotate.
 */
class MountedTls {
  #n = 0;
  constructor(readonly dir: string) {}
  get files(): { certFile: string; keyFile: string } {
    return {
      certFile: join(this.dir, "current", "tls.crt"),
      keyFile: join(this.dir, "current", "tls.key"),
    };
  }
  async write(cert: string, key: string): Promise<void> {
    const v = join(this.dir, `v${++this.#n}`);
    await Deno.mkdir(v, { recursive: true });
    await Deno.writeTextFile(join(v, "tls.crt"), cert);
    await Deno.writeTextFile(join(v, "tls.key"), key);
    const tmp = join(this.dir, `.current-${this.#n}`);
    await Deno.symlink(v, tmp);
    await Deno.rename(tmp, join(this.dir, "current"));
  }
}

/** The subject of the certificate the server at `port` shows a new connection (openssl). */
async function servedSubject(
  port: number,
  client: { cert: string; key: string },
  ca: string,
): Promise<string> {
  const out = await new Deno.Command("openssl", {
    args: [
      "s_client",
      "-connect",
      `127.0.0.1:${port}`,
      "-servername",
      SERVER_NAME,
      "-alpn",
      "h2",
      "-CAfile",
      ca,
      "-cert",
      client.cert,
      "-key",
      client.key,
      "-showcerts",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const m = /^\s*0 s:(.*)$/m.exec(text);
  return m
    ? m[1].trim().replaceAll(" = ", "=")
    : `none: ${new TextDecoder().decode(out.stderr).slice(0, 300)}`;
}

/**
 * Opens an ADS call to the server at `port` over TLS (checking it with `ca`, as SERVER_NAME),
 * with `client`'s certificate or none: "answered" when the response headers come, else the error.
 */
function adsCall(
  port: number,
  ca: string,
  client?: { cert: string; key: string },
): Promise<string> {
  return new Promise((resolve) => {
    const session = http2.connect(`https://127.0.0.1:${port}`, {
      ca: Deno.readTextFileSync(ca),
      servername: SERVER_NAME,
      ...(client
        ? { cert: Deno.readTextFileSync(client.cert), key: Deno.readTextFileSync(client.key) }
        : {}),
    });
    const done = (what: string) => {
      session.destroy();
      resolve(what);
    };
    session.on("error", (err: Error) => done(err.message));
    const req = session.request({
      ":method": "POST",
      ":path": ADS_PATH,
      "content-type": "application/grpc",
      te: "trailers",
    });
    req.on("response", () => done("answered"));
    req.on("error", (err: Error) => done(err.message));
    req.on("close", () => done("closed"));
  });
}

Deno.test("TLS files that cannot serve are refused at start, naming the flag and the file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "xds-tls-files-" });
  try {
    const pki = await generatePki(join(dir, "pki"));
    const a = await issueCert(pki, dir, {
      name: "a",
      subject: "/CN=a",
      usage: "serverAuth",
      sans: [`DNS:${SERVER_NAME}`],
    });
    const b = await issueCert(pki, dir, { name: "b", subject: "/CN=b", usage: "serverAuth" });
    const garbage = join(dir, "garbage.pem");
    await Deno.writeTextFile(garbage, "not a certificate\n");
    const cases: [XdsServingFiles, RegExp][] = [
      [
        { certFile: join(dir, "missing.crt"), keyFile: a.key },
        /^--global-engine-xds-tls-cert-file .*missing\.crt cannot be read: /,
      ],
      [{ certFile: garbage, keyFile: a.key }, /cert-file .*garbage\.pem holds no PEM certificate/],
      [{ certFile: a.cert, keyFile: garbage }, /key-file .*garbage\.pem holds no PEM private key/],
      [
        { certFile: a.cert, keyFile: b.key },
        /--global-engine-xds-tls-key-file .*b\.key is not the key of the certificate in .*a\.crt \(CN=a\)/,
      ],
      [
        { certFile: a.cert, keyFile: a.key, clientCaFile: garbage },
        /--global-engine-xds-client-ca-file .*garbage\.pem holds no PEM certificate/,
      ],
    ];
    for (const [files, message] of cases) {
      await assert.rejects(readXdsTls(files), (err: Error) => {
        assert.ok(err instanceof XdsTlsError, err.message);
        assert.match(err.message, message);
        return true;
      });
      // The server does not start, in cleartext or otherwise.
      const { log } = testLog();
      const server = new EngineXdsServer({ port: 0, hostname: "127.0.0.1", log, tls: files });
      await assert.rejects(server.start(), XdsTlsError);
      assert.equal(server.address, undefined, "not listening");
      await server.close();
    }
    // serveEngineConfig, as run.ts calls it, rejects the same way.
    await assert.rejects(
      serveEngineConfig({
        filters: () => undefined,
        port: 0,
        hostname: "127.0.0.1",
        tls: { certFile: a.cert, keyFile: b.key },
        log: testLog().log,
        clock: systemClock,
        signal: AbortSignal.abort(),
      }),
      XdsTlsError,
    );
    // Good files: read, with what the logs say of them.
    const good = await readXdsTls({ certFile: a.cert, keyFile: a.key, clientCaFile: pki.caCert });
    assert.equal(good.subject, "CN=a");
    assert.equal(good.names, `DNS:${SERVER_NAME}`);
    assert.deepEqual(good.warnings, []);
    const later = await readXdsTls(
      { certFile: a.cert, keyFile: a.key },
      Date.now() + 400 * 86400e3,
    );
    assert.match(later.warnings[0], /expired at/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("real engines over TLS: verified both ways; wrong CA, name, client certificate or cleartext load nothing; a rotated certificate is served without a restart", async (t) => {
  const bins = await ensureRatelimitEngine((m) => console.error(`[build] ${m}`));
  const dir = await Deno.makeTempDir({ prefix: "engine-xds-tls-" });
  const pki = await generatePki(join(dir, "pki"));
  const other = await generatePki(join(dir, "other-pki"));
  const serving = await issueCert(pki, join(dir, "certs"), {
    name: "xds",
    subject: "/CN=platform-operator-xds",
    usage: "serverAuth",
    sans: [`DNS:${SERVER_NAME}`],
  });
  const engineCert = await issueCert(pki, join(dir, "certs"), {
    name: "engine",
    subject: "/CN=ratelimit-engine",
    usage: "clientAuth",
  });
  const strangerCert = await issueCert(other, join(dir, "certs"), {
    name: "stranger",
    subject: "/CN=ratelimit-engine",
    usage: "clientAuth",
  });
  const mounted = new MountedTls(join(dir, "operator-tls"));
  await mounted.write(await Deno.readTextFile(serving.cert), await Deno.readTextFile(serving.key));
  const redis = await startRedis(dir);
  const client = startTestClient(bins);
  const { log, lines } = testLog();
  const server = new EngineXdsServer({
    port: 0,
    hostname: "127.0.0.1",
    log,
    tls: { ...mounted.files, clientCaFile: pki.caCert, reloadMs: 100 },
  });
  await server.start();
  const port = server.address!.port;
  const engines: Engine[] = [];
  const start = async (name: string, env: Record<string, string>) => {
    const e = await startEngine({
      name,
      dir,
      redis: redis.addr,
      config: xdsSource(`127.0.0.1:${port}`, name, { initial: "1s", max: "2s" }),
      env: { DISABLE_STATS: "true", FORCE_START_WITHOUT_INITIAL_CONFIG: "true", ...env },
      binaries: bins,
    });
    engines.push(e);
    return e;
  };
  const trusted = await secretVolume(join(dir, "secret-trusted"), pki.caCert, engineCert);
  try {
    let api = rateLimitOf("api", apiLimits(1000));
    const domain = "demo/api";
    let v = server.setSnapshot(snapshotOf([filterOf(api)]));
    const good: Engine[] = [];

    await t.step(
      "engines with the Secret's CA and a client certificate load the snapshot over TLS",
      async () => {
        const env = renderedTlsEnv(trusted, { clientCert: true });
        assert.deepEqual(Object.keys(env).sort(), [
          "CONFIG_GRPC_XDS_CLIENT_TLS_CERT",
          "CONFIG_GRPC_XDS_CLIENT_TLS_KEY",
          "CONFIG_GRPC_XDS_SERVER_TLS_CACERT",
          "CONFIG_GRPC_XDS_SERVER_TLS_SAN",
          "CONFIG_GRPC_XDS_SERVER_USE_TLS",
        ]);
        assert.equal(env.CONFIG_GRPC_XDS_SERVER_TLS_SAN, SERVER_NAME);
        for (const name of ["engine-a", "engine-b"]) good.push(await start(name, env));
        await until(() => server.streams().filter((s) => s.acked === v).length === 2, "both ACK");
        for (const s of server.streams()) assert.equal(s.client, "CN=ratelimit-engine");
        for (const e of good) {
          assert.deepEqual(
            linesOfDomain(await e.rlconfig(), domain),
            rlconfigLines(snapshotOf([filterOf(api)])[0]),
          );
          assert.equal(await limitOf(client, e, requestOf(api, 0)), 1000);
        }
      },
    );

    const refused: { name: string; env: Record<string, string>; why: string }[] = [
      {
        name: "wrong-ca",
        env: renderedTlsEnv(
          await secretVolume(join(dir, "secret-other-ca"), other.caCert, engineCert),
          {
            clientCert: true,
          },
        ),
        why: "another CA",
      },
      {
        name: "wrong-san",
        env: renderedTlsEnv(trusted, { clientCert: true }, {
          CONFIG_GRPC_XDS_SERVER_TLS_SAN: "platform-operator-xds.elsewhere.svc",
        }),
        why: "another server name",
      },
      {
        name: "no-client-cert",
        env: renderedTlsEnv(await secretVolume(join(dir, "secret-ca-only"), pki.caCert), {
          clientCert: false,
        }),
        why: "no client certificate",
      },
      {
        name: "stranger-cert",
        env: renderedTlsEnv(
          await secretVolume(join(dir, "secret-stranger"), pki.caCert, strangerCert),
          {
            clientCert: true,
          },
        ),
        why: "a client certificate of another CA",
      },
      { name: "cleartext", env: {}, why: "cleartext" },
    ];

    await t.step(
      "an engine with another CA, another server name, no or a stranger's client certificate, or cleartext loads nothing; GlobalEnforced says DomainNotLoaded",
      async () => {
        const bad: Engine[] = [];
        const handshakesBefore = lines.filter((l) =>
          String(l.msg).includes("refused in its TLS handshake")
        ).length;
        for (const r of refused) bad.push(await start(r.name, r.env));
        // A trusted engine loads within milliseconds (above); these had 4 s and backoffs of 1-2 s.
        await sleep(4000);
        const nodes = server.streams().map((s) => s.node).sort();
        assert.deepEqual(nodes, ["engine-a", "engine-b"], "only the trusted engines have streams");
        for (const [i, e] of bad.entries()) {
          assert.ok(e.running(), `${e.name} runs`);
          assert.deepEqual(
            linesOfDomain(await e.rlconfig(), domain),
            [],
            `${refused[i].why}: nothing loaded`,
          );
          // With no configuration at all it answers every call with an error ("no rate limit
          // configuration loaded"): the failure mode applies, nothing is counted.
          const answer = await client.ask(e.grpc, requestOf(api, 0));
          assert.match(
            answer.error?.message ?? "",
            /no rate limit configuration loaded/,
            refused[i].why,
          );
        }
        assert.ok(
          lines.filter((l) => String(l.msg).includes("refused in its TLS handshake")).length >
            handshakesBefore,
          "the server logged refused handshakes",
        );
        // GlobalEnforced, from the engines' /rlconfig read back as the operator reads it: the
        // trusted engines alone are Enforced; with any refused one beside them, DomainNotLoaded
        // naming it.
        const filter = filterOf(api);
        const podOf = async (e: Engine) => {
          const read = parseRlconfig(await e.rlconfig());
          assert.ok(read.ok);
          return {
            name: e.name,
            ready: true,
            redis: "Reachable" as const,
            loaded: read.domains,
            since: "",
          };
        };
        const enforcement = async (pods: readonly Engine[]) => {
          const observation: EngineObservation = {
            listing: { listed: true, pods: pods.length },
            pods: await Promise.all(pods.map(podOf)),
          };
          return globalEnforcement(
            inForceOf(reachOf("demo", "istio-system"), { app: "api" }, filter),
            true,
            observation,
            true,
            { namespace: "demo", name: "api" },
            { previous: undefined, now: Date.now(), generation: 1 },
          )!.condition;
        };
        assert.equal((await enforcement(good)).reason, "Enforced");
        for (const [i, e] of bad.entries()) {
          const c = await enforcement([...good, e]);
          assert.equal(c.reason, "DomainNotLoaded", refused[i].why);
          assert.equal(c.status, "Unknown");
          assert.match(
            c.message,
            new RegExp(
              `^1 of 3 Ready rate limit engine Pods has not loaded domain demo/api as in force \\(not holding it: ${e.name}\\)`,
            ),
          );
        }
        for (const e of bad) {
          await e.stop();
          engines.splice(engines.indexOf(e), 1);
        }
      },
    );

    await t.step(
      "a certificate rotated on disk reaches new connections without a restart; open streams go on; bad files keep the served one",
      async () => {
        const streams = server.streams().map((s) => s.id).sort();
        assert.equal(await servedSubject(port, engineCert, pki.caCert), "CN=platform-operator-xds");
        const rotated = await issueCert(pki, join(dir, "certs"), {
          name: "xds-rotated",
          subject: "/CN=platform-operator-xds-rotated",
          usage: "serverAuth",
          sans: [`DNS:${SERVER_NAME}`],
        });
        const t0 = Date.now();
        await mounted.write(
          await Deno.readTextFile(rotated.cert),
          await Deno.readTextFile(rotated.key),
        );
        await until(
          () => server.certificate?.subject === "CN=platform-operator-xds-rotated",
          "reloaded",
        );
        console.log(`rotated certificate on disk -> served: ${Date.now() - t0} ms`);
        assert.equal(
          await servedSubject(port, engineCert, pki.caCert),
          "CN=platform-operator-xds-rotated",
        );
        // The client CA still holds after the new context: an ADS call without a client
        // certificate is refused, one with the engines' certificate answered.
        const refusedCall = await adsCall(port, pki.caCert);
        console.log(`without a client certificate: ${refusedCall}`);
        assert.match(refusedCall, /CertificateRequired/);
        assert.equal(await adsCall(port, pki.caCert, engineCert), "answered");
        await until(() => server.streams().length === 2, "the answered call's stream closed");
        // The open streams are the same, and an edit still reaches both engines on them.
        assert.deepEqual(server.streams().map((s) => s.id).sort(), streams);
        api = rateLimitOf("api", apiLimits(1001));
        const t1 = Date.now();
        v = server.setSnapshot(snapshotOf([filterOf(api)]));
        await untilAnswering(client, good, requestOf(api, 0), 1001, t1);
        assert.deepEqual(server.streams().map((s) => s.id).sort(), streams, "no reconnect");
        // A new engine connects with the rotated certificate and loads.
        const c = await start("engine-c", renderedTlsEnv(trusted, { clientCert: true }));
        await until(
          () => server.streams().some((s) => s.node === "engine-c" && s.acked === v),
          "engine-c ACKs",
        );
        assert.equal(await limitOf(client, c, requestOf(api, 0)), 1001);
        // Files that cannot serve (a key of another certificate): logged, the rotated one stays.
        await mounted.write(
          await Deno.readTextFile(serving.cert),
          await Deno.readTextFile(rotated.key),
        );
        await until(
          () => lines.some((l) => String(l.msg).includes("changed but cannot serve")),
          "refusal logged",
        );
        assert.equal(server.certificate?.subject, "CN=platform-operator-xds-rotated");
        assert.equal(
          await servedSubject(port, engineCert, pki.caCert),
          "CN=platform-operator-xds-rotated",
        );
        assert.ok(good.every((e) => e.running()));
      },
    );
  } finally {
    await server.close();
    for (const e of engines) await e.stop();
    await client.stop();
    await redis.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the operator with the TLS flags: serves the engines over mutual TLS; files that cannot serve stop it with one line, never cleartext", async () => {
  const dir = await Deno.makeTempDir({ prefix: "xds-tls-run-" });
  const api = new SimApi();
  const server = await startServer(api.handle);
  try {
    const pki = await generatePki(join(dir, "pki"));
    const serving = await issueCert(pki, dir, {
      name: "xds",
      subject: "/CN=platform-operator-xds",
      usage: "serverAuth",
      sans: [`DNS:${SERVER_NAME}`],
    });
    const engine = await issueCert(pki, dir, {
      name: "engine",
      subject: "/CN=ratelimit-engine",
      usage: "clientAuth",
    });
    const kubeconfig = await kubeconfigFor(server.url);
    const run = (keyFile: string, onPort?: (port: number) => void) => {
      const parsed = parseRunFlags([
        `--kubeconfig=${kubeconfig}`,
        "--allow-insecure-http",
        "--probe-addr=127.0.0.1:0",
        "--metrics-addr=127.0.0.1:0",
        "--identity=test-replica",
        "--controllers=ratelimit",
        "--global-redis-secret=platform-ratelimit/redis",
        "--global-engine-xds-port=0",
        `--global-engine-xds-tls-cert-file=${serving.cert}`,
        `--global-engine-xds-tls-key-file=${keyFile}`,
        `--global-engine-xds-client-ca-file=${pki.caCert}`,
        "--global-engine-xds-tls-secret=platform-ratelimit/engine-xds-tls",
      ], () => undefined);
      assert.equal(parsed.kind, "options", JSON.stringify(parsed));
      if (parsed.kind !== "options") throw new Error("unreachable");
      const lines: Record<string, unknown>[] = [];
      const stop = new AbortController();
      const exit = runOperator(parsed.options, {
        shutdown: stop.signal,
        sink: (l) => lines.push(JSON.parse(l)),
        preflightBackoff: { initialMs: 5, maxMs: 5 },
        onListening: (a) => a.engineXds !== undefined && onPort?.(a.engineXds),
      });
      return { lines, stop, exit };
    };
    // A key file that is not there: exit 1, one error line naming the flag, nothing served.
    const bad = run(join(dir, "missing.key"), () => assert.fail("served"));
    assert.equal(await bad.exit, 1);
    const errors = bad.lines.filter((l) => l.level === "error").map((l) => String(l.msg));
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.match(
      errors[0],
      /^cannot serve the engines over TLS: --global-engine-xds-tls-key-file .*missing\.key cannot be read: /,
    );
    // Good files: mutual TLS on the port served.
    let port = 0;
    const good = run(serving.key, (p) => (port = p));
    await until(() => port !== 0, "the xDS port");
    assert.equal(await adsCall(port, pki.caCert, engine), "answered");
    assert.match(await adsCall(port, pki.caCert), /CertificateRequired/);
    const plain = await new Promise<string>((resolve) => {
      const session = http2.connect(`http://127.0.0.1:${port}`);
      session.on("error", (err: Error) => resolve(err.message));
      const req = session.request({ ":method": "POST", ":path": ADS_PATH });
      req.on("response", () => resolve("answered"));
      req.on("error", (err: Error) => resolve(err.message));
      req.on("close", () => resolve("closed"));
      setTimeout(() => session.destroy(), 2000);
    });
    assert.notEqual(plain, "answered", "no cleartext");
    assert.ok(
      good.lines.some((l) =>
        l.msg === "serving the rate limit engines' configuration" &&
        /^mutual TLS .*certificate CN=platform-operator-xds/.test(String(l.tls))
      ),
      "the start says TLS",
    );
    good.stop.abort();
    assert.equal(await good.exit, 0);
  } finally {
    api.close();
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});
