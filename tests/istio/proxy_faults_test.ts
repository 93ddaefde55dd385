/**
 * Status follows the proxies and istiod through faults, with no operator restart (issue 42 point
 * 4), against a real istiod with the proxy stand-in (a test harness standing in for Envoy) as the
 * proxies of two injected httpbin Pods under samples/ratelimit-workload.yaml:
 *
 * - a Pod whose proxy never connects: Accepted Unknown Pending naming it, counted notConnected;
 *   once it connects, True on both;
 * - a proxy that goes away and comes back (its stream stopped, a new one opened): Pending naming
 *   it, then True;
 * - istiod stopped, then started again on its ports: Unknown IstiodUnavailable (Unreachable), no
 *   counts; the stand-ins reconnect by themselves and the status is True again.
 *
 * And the operator's token path as in a cluster (a second operator, same cluster): istiod checks
 * no request from loopback, so the operator asks it through a relay in this test that connects
 * from `authSource`, a non-loopback address of this machine, passing the Authorization header on.
 * The operator has no flag for a local address to connect from; with one the relay could go. Its
 * token file is swapped as a projected token is rotated (a new file renamed over the old): another
 * audience gives Unauthenticated (401), a token of istiod's root namespace True, a namespace istiod
 * does not allow Forbidden (403), and the operator's own namespace, allowed to read syncz but not
 * another namespace's proxy dumps, NotVerifiable for a new push (a refused dump is asked again only
 * for a new push, src/kube/istiod_source.ts; what was verified of the push held stays Accepted).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Istiod } from "../../tools/cluster/mod.ts";
import { REPO_ROOT } from "../../tools/cluster/paths.ts";
import { eventually, ok } from "../../tools/cluster/test_helpers.ts";
import { isAlive } from "../../tools/processes.ts";
import { proxyOfPod } from "../../tools/istio-check/proxy-standin/mod.ts";
import {
  acceptedOf,
  injectedDemo,
  meshTest,
  proxyKey as key,
  type RateLimitStatus,
} from "./mesh_fixtures.ts";

const ALL_ACCEPTED = { accepted: 2, rejected: 0, pending: 0, notConnected: 0 };

/** What the relay forwarded: the path, and whether a bearer token came with it. */
interface Relayed {
  path: string;
  bearer: boolean;
  status: number;
}

/**
 * A loopback HTTP relay to istiod's debug port whose requests leave from `istiod.authSource`, so
 * istiod authenticates them as it would a Pod's; the Authorization header is passed on.
 */
function relayToIstiod(istiod: Istiod) {
  const client = istiod.authClient();
  const seen: Relayed[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      const headers = new Headers({ accept: "application/json" });
      const auth = req.headers.get("authorization");
      if (auth) headers.set("authorization", auth);
      const res = await fetch(`${istiod.debug}${url.pathname}${url.search}`, {
        client,
        headers,
        signal: AbortSignal.timeout(10_000),
      });
      seen.push({
        path: url.pathname,
        bearer: auth?.startsWith("Bearer ") ?? false,
        status: res.status,
      });
      return new Response(res.body, { status: res.status });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    close: async () => {
      await server.shutdown();
      client.close();
    },
  };
}

/** Replaces `file` with `token` as a projected volume rotates it: a new file renamed over. */
async function rotate(file: string, token: string): Promise<void> {
  await Deno.writeTextFile(`${file}.new`, token);
  await Deno.rename(`${file}.new`, file);
}

meshTest(
  "status follows the proxies and istiod with no operator restart; istiod checks the operator's token",
  "proxy-faults",
  async (m, t) => {
    const { c, istiod } = m;
    const [first, second] = (await injectedDemo(c, 2)).map(proxyOfPod);
    // Only the first Pod's proxy connects.
    const proxies = await m.standin([first]);
    let op = await m.operator("faults");
    const { tokenFile } = op;
    const until = (what: string, test: (s: RateLimitStatus) => boolean) => op.until(what, test);
    const accepted = (s: RateLimitStatus) =>
      acceptedOf(s)?.status === "True" &&
      Object.entries(ALL_ACCEPTED).every(([k, n]) => s.proxies?.[k] === n);
    const timed = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
      const t0 = Date.now();
      const v = await fn();
      console.error(`${what}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      return v;
    };

    /** Waits for Pending with `pod`'s proxy not connected and the other accepted; checks it. */
    const oneNotConnected = async (what: string, pod: string) => {
      const s = await timed(what, () =>
        until(
          `Pending with ${pod} not connected`,
          (s) =>
            acceptedOf(s)?.reason === "Pending" && s.proxies?.accepted === 1 &&
            s.proxies?.notConnected === 1,
        ));
      assert.deepEqual(s.proxies, { accepted: 1, rejected: 0, pending: 0, notConnected: 1 });
      assert.equal(acceptedOf(s)?.status, "Unknown");
      assert.equal(
        acceptedOf(s)?.message,
        `1 of 2 proxies have not taken the limit yet; not connected to istiod: ${pod}`,
      );
    };

    await t.step("a Pod whose proxy never connects: Pending, counted notConnected", async () => {
      await ok(c, ["apply", "-f", join(REPO_ROOT, "samples", "ratelimit-workload.yaml")]);
      await oneNotConnected("apply to Pending (one not connected)", second.pod);
    });

    await t.step("it connects: Accepted True on both", async () => {
      await proxies.add([second]);
      const s = await timed("connect to Accepted", () => until("Accepted on both", accepted));
      assert.equal(
        acceptedOf(s)?.message,
        "All 2 proxies acknowledged the config holding the limit in force",
      );
    });

    await t.step("a proxy goes away and comes back: Pending naming it, then True", async () => {
      await proxies.remove(key(first));
      await oneNotConnected("disconnect to Pending", first.pod);
      await proxies.add([first]);
      await timed("reconnect to Accepted", () => until("Accepted on both again", accepted));
    });

    await t.step("istiod stopped: IstiodUnavailable; started again: True", async () => {
      const before = await Promise.all([first, second].map((p) => proxies.proxy(key(p))));
      const pid = istiod.pid;
      Deno.kill(pid, "SIGTERM");
      await eventually("istiod gone", () => Promise.resolve(isAlive(pid) ? undefined : true));
      const down = await timed(
        "istiod stopped to IstiodUnavailable",
        () => until("IstiodUnavailable", (s) => acceptedOf(s)?.reason === "IstiodUnavailable"),
      );
      assert.equal(acceptedOf(down)?.status, "Unknown");
      assert.match(
        acceptedOf(down)!.message,
        new RegExp(
          `^istiod could not be asked \\(Unreachable\\): GET ${istiod.debug}/debug/syncz: `,
        ),
      );
      // Nothing is counted while istiod cannot be asked.
      assert.equal(down.proxies, undefined);
      // The proxies keep what they accepted while their stream is down, as Envoy does.
      await eventually("the stand-ins see the stream end", async () => {
        const views = await Promise.all([first, second].map((p) => proxies.proxy(key(p))));
        return views.every((v) => !v.connected) ? views : undefined;
      });
      for (const [i, p] of [first, second].entries()) {
        const v = await proxies.proxy(key(p));
        assert.equal(
          v.xds.LDS.version,
          before[i].xds.LDS.version,
          `${p.pod} keeps its listeners`,
        );
      }
      const restarted = Date.now();
      await istiod.restart();
      console.error(`istiod ready again in ${istiod.readySeconds.toFixed(1)} s`);
      const s = await until("Accepted on both after istiod's restart", accepted);
      console.error(
        `istiod restart to Accepted: ${((Date.now() - restarted) / 1000).toFixed(1)} s`,
      );
      assert.equal(acceptedOf(s)?.reason, "Accepted");
      for (const [i, p] of [first, second].entries()) {
        const v = await proxies.proxy(key(p));
        assert.ok(v.connected && v.connects > before[i].connects, `${p.pod} reconnected`);
      }
    });

    await op.process.stop();

    await t.step("the token path from a non-loopback address", async (t) => {
      const via = relayToIstiod(istiod);
      m.defer(via.close);
      // Through the relay istiod checks every request: no token, 401.
      const bare = await fetch(`${via.url}/debug/syncz`);
      await bare.body?.cancel();
      assert.equal(bare.status, 401);
      // A token of the API server's audience, not istio-ca.
      const apiAudience = (await ok(c, [
        "create",
        "token",
        "platform-operator",
        "-n",
        "platform-system",
      ])).trim();
      await rotate(tokenFile, apiAudience);
      op = await m.operator("faults-token", { url: via.url, tokenFile });
      const unavailable = (why: string) => (s: RateLimitStatus) =>
        acceptedOf(s)?.reason === "IstiodUnavailable" &&
        acceptedOf(s)!.message.includes(`(${why})`);

      await t.step("another audience: Unauthenticated", async () => {
        const s = await until(
          "IstiodUnavailable (Unauthenticated)",
          unavailable("Unauthenticated"),
        );
        assert.equal(acceptedOf(s)?.status, "Unknown");
        assert.equal(
          acceptedOf(s)?.message,
          `istiod could not be asked (Unauthenticated): GET ${via.url}/debug/syncz: 401, istiod did not accept the token (audience istio-ca)`,
        );
        assert.equal(s.proxies, undefined);
      });

      await t.step("a token of istiod's root namespace: True", async () => {
        await rotate(tokenFile, await istiod.token(istiod.rootNamespace, "istiod"));
        await timed(
          "root token to Accepted (after the back-off)",
          () => until("Accepted through the relay", accepted),
        );
      });

      await t.step("a namespace istiod does not allow: Forbidden", async () => {
        await rotate(tokenFile, await istiod.token("demo", "default"));
        const s = await until("IstiodUnavailable (Forbidden)", unavailable("Forbidden"));
        assert.equal(
          acceptedOf(s)?.message,
          `istiod could not be asked (Forbidden): GET ${via.url}/debug/syncz: 403, istiod does not let this namespace read it (list it in istiod's DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES)`,
        );
        assert.equal(s.proxies, undefined);
      });

      await t.step(
        "the operator's own namespace: syncz allowed, a new push's dumps not",
        async () => {
          await rotate(tokenFile, await istiod.token("platform-system", "platform-operator"));
          // syncz answers again (after the back-off); what was verified of the push the proxies
          // hold stays verified: Accepted.
          await timed(
            "own token to Accepted (after the back-off)",
            () => until("Accepted with the operator's own token", accepted),
          );
          // A new limit: istiod pushes it, and the dumps of that push are not shown to this token.
          await ok(c, [
            "patch",
            "ratelimit",
            "httpbin",
            "-n",
            "demo",
            "--type=json",
            "-p",
            JSON.stringify([{
              op: "replace",
              path: "/spec/local/defaultBucket/maxTokens",
              value: 11,
            }]),
          ]);
          const s = await timed(
            "a new limit to NotVerifiable",
            () => until("NotVerifiable", (s) => acceptedOf(s)?.reason === "NotVerifiable"),
          );
          assert.equal(acceptedOf(s)?.status, "Unknown");
          assert.deepEqual(
            s.proxies,
            { accepted: 0, rejected: 0, pending: 2, notConnected: 0 },
          );
          assert.match(
            acceptedOf(s)!.message,
            /^istiod does not show the operator what 2 of 2 proxies hold \(NotFound: GET .*\/debug\/config_dump\?proxyID=httpbin-.*: 404, .*\): give the operator a token of istiod's root namespace$/,
          );
        },
      );
      // Every request came with a token, and istiod answered each of 200, 401, 403 and 404.
      assert.ok(via.seen.length > 0 && via.seen.slice(1).every((r) => r.bearer));
      assert.deepEqual(
        [...new Set(via.seen.map((r) => r.status))].sort(),
        [200, 401, 403, 404],
      );
    });
  },
);
