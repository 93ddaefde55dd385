/**
 * TLS between the global rate limit engines and the operator on the real node (issue #43): the
 * operator (a host process) serves the engines' configuration over mutual TLS with a certificate
 * for its xDS Service's name (`--global-engine-xds-tls-cert-file`, `-key-file`,
 * `--global-engine-xds-client-ca-file`), and the engines it deploys (its image, restricted
 * namespace, uid 65532, read-only root) take the CA and their client certificate from a
 * kubernetes.io/tls Secret as cert-manager writes one (`--global-engine-xds-tls-secret`), mounted as
 * files. Shown: both engines load the RateLimit's domain over TLS (GlobalEnforced True, read back
 * from their /rlconfig); the Secret given another CA (as if the server were not the operator) rolls
 * the engines, which then load nothing, and GlobalEnforced says DomainNotLoaded; the right Secret
 * again rolls them back to Enforced.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import {
  describeEngines,
  engineE2eSkip,
  engineOperatorArgs,
  globalEnforcedOf,
  readyEnginePods,
  setUpEngine,
} from "./global_engine_env.ts";
import { generatePki, issueCert } from "../../tools/cluster/pki.ts";
import { buildEngineImage } from "../../tools/ratelimit-engine/image.ts";
import type { RedisServer } from "../../tools/ratelimit-engine/redis.ts";
import { engineXdsServerUrl, GLOBAL_ENGINE_SERVICE } from "../../src/api/global_engine.ts";
import { hostOf, XDS_TLS_SECRET_DIGEST_ANNOTATION } from "../../src/reconcile/engine/xds_tls.ts";
import type { KubeObject } from "../../src/api/object.ts";

const NS = GLOBAL_ENGINE_SERVICE.namespace;
const APP = "demo-tls";
const PASSWORD = "tls-e2e";
/** The name the operator's certificate holds: its xDS Service's, as the engines check it. */
const SERVER_NAME = hostOf(engineXdsServerUrl("platform-system"));

const SKIP: string = await engineE2eSkip("global engine TLS");

type Deployment = KubeObject & {
  status?: { updatedReplicas?: number };
  spec: {
    template: {
      metadata: { annotations: Record<string, string> };
      spec: { containers: { env: { name: string; value?: string }[] }[] };
    };
  };
};

const globalEnforced = (env: E2E) => globalEnforcedOf(env, APP, "checkout");
const describe = async (env: E2E) =>
  `${JSON.stringify(await globalEnforced(env))}\n${await describeEngines(env)}`;
const readyEngines = readyEnginePods;

/** Waits for GlobalEnforced with `reason`; returns it and the seconds it took. */
async function untilReason(env: E2E, reason: string, timeoutMs = 120_000) {
  const t0 = performance.now();
  const c = await waitFor(`GlobalEnforced ${reason}`, async () => {
    const g = await globalEnforced(env);
    return g?.reason === reason ? g : undefined;
  }, { timeoutMs, intervalMs: 250, describe: () => describe(env) });
  return { condition: c, s: ((performance.now() - t0) / 1000).toFixed(1) };
}

e2eSuite("global-engine-tls-real", async (env, t) => {
  const image = await buildEngineImage((l) => console.error(`[engine image] ${l}`));
  let redis: RedisServer | undefined;
  const pkiDir = join(env.dir, "xds-pki");
  const pki = await generatePki(join(pkiDir, "ca"));
  const other = await generatePki(join(pkiDir, "other-ca"));
  const serving = await issueCert(pki, pkiDir, {
    name: "xds",
    subject: "/CN=platform-operator-xds",
    usage: "serverAuth",
    sans: [`DNS:${SERVER_NAME}`],
  });
  const client = await issueCert(pki, pkiDir, {
    name: "engine",
    subject: "/CN=ratelimit-engine",
    usage: "clientAuth",
  });
  /** The engines' Secret as cert-manager writes it, its ca.crt from `ca`. */
  const engineSecret = async (ca: string): Promise<KubeObject> => ({
    apiVersion: "v1",
    kind: "Secret",
    type: "kubernetes.io/tls",
    metadata: { name: "engine-xds-tls", namespace: NS },
    stringData: {
      "ca.crt": await Deno.readTextFile(ca),
      "tls.crt": await Deno.readTextFile(client.cert),
      "tls.key": await Deno.readTextFile(client.key),
    },
  } as unknown as KubeObject);
  const deployment = () => env.kube.get<Deployment>("deployment", GLOBAL_ENGINE_SERVICE.name, NS);
  /** Replaces the engines' Secret and waits until the engines rolled onto it. */
  const rollTo = async (ca: string) => {
    const before = (await deployment())!.spec.template.metadata
      .annotations[XDS_TLS_SECRET_DIGEST_ANNOTATION];
    await env.kube.must(["replace", "-f", "-"], { stdin: JSON.stringify(await engineSecret(ca)) });
    await waitFor("the rolled template", async () => {
      const d = await deployment();
      return d?.spec.template.metadata.annotations[XDS_TLS_SECRET_DIGEST_ANNOTATION] !== before &&
        d?.status?.updatedReplicas === 2;
    }, { timeoutMs: 180_000, describe: () => describe(env) });
    return await readyEngines(env, 2);
  };
  try {
    await env.step(
      t,
      "the operator serving over mutual TLS, the engines with their Secret",
      async () => {
        redis = await setUpEngine(env, {
          image,
          password: PASSWORD,
          appNamespace: APP,
          secrets: [await engineSecret(pki.caCert)],
        });
        await env.startServing({
          identity: "global-tls",
          extraArgs: [
            // The real node has no DNS: the engines dial the bridge address and check the name.
            ...engineOperatorArgs(env, image),
            `--global-engine-xds-tls-server-name=${SERVER_NAME}`,
            `--global-engine-xds-tls-cert-file=${serving.cert}`,
            `--global-engine-xds-tls-key-file=${serving.key}`,
            `--global-engine-xds-client-ca-file=${pki.caCert}`,
            `--global-engine-xds-tls-secret=${NS}/engine-xds-tls`,
          ],
        });
        const pods = await readyEngines(env, 2);
        for (const p of pods) {
          assert.equal(p.spec.securityContext?.runAsUser, 65532);
          assert.equal(p.status.containerStatuses?.[0].restartCount, 0, p.metadata.name);
        }
        const envOf = Object.fromEntries(
          (await deployment())!.spec.template.spec.containers[0].env.map((e) => [e.name, e.value]),
        );
        assert.equal(envOf.CONFIG_GRPC_XDS_SERVER_USE_TLS, "true");
        assert.equal(envOf.CONFIG_GRPC_XDS_SERVER_TLS_SAN, SERVER_NAME);
      },
    );

    await env.step(t, "both engines load the domain over TLS: GlobalEnforced True", async () => {
      await env.kube.apply([{
        apiVersion: "gateway.platform-project.io/v1alpha1",
        kind: "RateLimit",
        metadata: { name: "checkout", namespace: APP },
        spec: {
          selectorLabels: { app: "checkout" },
          global: { default: { limit: { requests: 4, unit: "Second" } } },
        },
      } as unknown as KubeObject]);
      const { condition, s } = await untilReason(env, "Enforced");
      assert.equal(condition.status, "True");
      console.error(`[global-engine-tls-real] apply -> GlobalEnforced True over TLS in ${s} s`);
    });

    await env.step(
      t,
      "the engines' Secret with another CA: rolled, they load nothing, GlobalEnforced says DomainNotLoaded",
      async () => {
        const t0 = performance.now();
        await rollTo(other.caCert);
        const { condition, s } = await untilReason(env, "DomainNotLoaded");
        assert.match(condition.message, /not holding it/);
        console.error(
          `[global-engine-tls-real] another CA: rolled and DomainNotLoaded ${s} s after the roll (${
            ((performance.now() - t0) / 1000).toFixed(1)
          } s in all)`,
        );
      },
    );

    await env.step(t, "the right CA again: rolled back to Enforced", async () => {
      await rollTo(pki.caCert);
      const { s } = await untilReason(env, "Enforced");
      console.error(`[global-engine-tls-real] the right CA: Enforced ${s} s after the roll`);
    });
  } finally {
    await redis?.close();
  }
}, { realNode: true, skip: SKIP });
