/**
 * The Scaler's cluster DNS check with the operator as platform teams deploy it (issue 44): deploy/
 * on the real node (the image built here, two replicas in platform-system), KEDA's images set
 * through the Deployment's environment, KEDA on the real node. In its Pod the operator asks its
 * own resolver (`--cluster-dns` is `auto`: the Pod's /etc/resolv.conf, the kube-dns Service, as
 * for KEDA's Pods), which keda_real_test.ts, whose operator is a host process, cannot show. With
 * CoreDNS scaled to 0 the Scaler leaves Ready naming DNS and is Ready again once it is back
 * (keda_dns.ts); no ScaledObject or HPA is deleted.
 */
import assert from "node:assert/strict";
import { KEDA_DEPLOYMENTS } from "../../src/reconcile/scaler/names.ts";
import { envName } from "../../src/cli/run_flags.ts";
import { moduleGrantsRole } from "../../src/kube/rbac.ts";
import { e2eSuite, waitFor } from "./harness.ts";
import { namespace, scaledObject, scaler } from "./fixtures.ts";
import {
  imageFlags,
  KEDA_REAL_SKIP,
  kedaImages,
  kwokDeployment,
  realNodeNamespace,
} from "./keda_real.ts";
import { DEPLOYED, SELECTOR } from "./deployed.ts";
import { deployOperator } from "./faults_deployed.ts";
import { clusterDnsOutage } from "./keda_dns.ts";

const NS = "keda-system";
const USER_NS = "e2e-user";
/** KEDA's Pods restart until its operator has written their certificates: minutes. */
const READY_MS = 420_000;

e2eSuite("keda-dns", async (env, t) => {
  const images = await kedaImages();
  const node = env.cluster.realNode!;

  await env.step(
    t,
    "deploy/ runs the operator in its Pods, KEDA's images from its environment",
    async () => {
      await env.installCrds();
      await env.kube.apply([realNodeNamespace(NS), namespace(USER_NS)]);
      for (const i of Object.values(images)) {
        const names = await node.loadImage(i.archive);
        assert.ok(
          names.includes(i.ref),
          `${i.archive} loaded as ${names.join(", ")}, not ${i.ref}`,
        );
      }
      await env.kube.apply(moduleGrantsRole(NS));
      await deployOperator(env);
      // `--keda-operator-image=X` is PLATFORM_OPERATOR_KEDA_OPERATOR_IMAGE=X in the Pod.
      const vars = imageFlags(images).map((f) => {
        const [flag, value] = f.slice(2).split("=");
        return `${envName(flag)}=${value}`;
      });
      const deployment = `deployment/${DEPLOYED.name}`;
      await env.kube.must(["set", "env", deployment, "-n", DEPLOYED.namespace, ...vars]);
      await env.kube.must([
        "rollout",
        "status",
        deployment,
        "-n",
        DEPLOYED.namespace,
        "--timeout=180s",
      ]);
      await waitFor("default ServiceAccounts", async () => {
        for (const ns of [NS, USER_NS]) if (!await env.kube.get("sa", "default", ns)) return false;
        return true;
      });
      await env.kube.apply([scaler(NS, "keda")]);
      await env.waitStatus("scaler", NS, "keda", { state: "Ready" }, {
        timeoutMs: READY_MS,
        intervalMs: 1000,
      });
      // Both replicas ask their Pod's resolver (the leader's lookups are the ones the Scaler shows).
      const logs = await env.kube.must([
        "logs",
        "-n",
        DEPLOYED.namespace,
        "-l",
        SELECTOR,
        "--tail=-1",
        "--prefix",
      ]);
      const asking = logs.split("\n").filter((l) =>
        /looking up the names KEDA's Pods dial/.test(l) && /the operator Pod's resolver/.test(l)
      );
      assert.equal(asking.length, 2, logs);
      assert.doesNotMatch(logs, /cluster DNS does not resolve/, "resolved from the start");
    },
  );

  await env.step(t, "a ScaledObject gets KEDA's HPA", async () => {
    await env.kube.apply([kwokDeployment(USER_NS, "web"), scaledObject(USER_NS, "hello", "web")]);
    await waitFor("HPA keda-hpa-hello", () => env.kube.get("hpa", "keda-hpa-hello", USER_NS), {
      timeoutMs: 120_000,
    });
  });

  await env.step(
    t,
    "CoreDNS scaled to 0: the Scaler leaves Ready naming DNS, Ready again once it is back",
    async () => {
      await clusterDnsOutage(
        env,
        NS,
        "keda",
        `${KEDA_DEPLOYMENTS.operator}.${NS}.svc.cluster.local`,
      );
      const logs = await env.kube.must(["logs", "-n", DEPLOYED.namespace, "-l", SELECTOR]);
      console.error(
        `[keda-dns] the operator's log:\n${
          logs.split("\n").filter((l) => /cluster DNS|KEDA dials/.test(l)).join("\n")
        }`,
      );
    },
  );
}, { realNode: true, skip: KEDA_REAL_SKIP });
