/**
 * A floor program: Deno holding the connections an idle operator holds, and running none of its
 * code. It lists and watches the paths in FLOOR_WATCHES over one HTTP/2 client, reads the Lease at
 * FLOOR_LEASE every 2 s over it and posts an access review over it too (a write with a body under
 * 1 KiB, as a leader's renewal is, that changes nothing),
 * and serves two loopback listeners (metrics, probes), each asked once. FLOOR_SERVER, FLOOR_CA
 * (PEM) and FLOOR_TOKEN reach the API server as the operator's user. Imported by a floor file
 * (floor.ts): top-level await, so the floor's 3 s wait starts once every watch is open.
 */
import { floorEnv as env, floorServer } from "./floor_env.ts";

const { server, caCerts, headers } = floorServer();
const reads = Deno.createHttpClient({ caCerts });

/** A GET, again while the server asks to wait (429: a CRD's storage still initializing). */
async function get(url: string): Promise<Response> {
  for (let attempt = 0;; attempt++) {
    const res = await fetch(url, { client: reads, headers });
    if (res.status !== 429 || attempt === 30) return res;
    await res.body?.cancel();
    await new Promise((r) => setTimeout(r, 1000));
  }
}

for (const path of env("FLOOR_WATCHES").split(" ")) {
  const listed = await get(`${server}${path}`);
  // An optional type whose CRD is absent: the operator keeps only a CRD watch for it.
  if (listed.status === 404) {
    await listed.body?.cancel();
    continue;
  }
  // Anything else would make a floor lower than the operator's for a reason of its own.
  if (!listed.ok) throw new Error(`floor: list ${path}: ${listed.status} ${await listed.text()}`);
  const rv = (await listed.json()).metadata.resourceVersion;
  const watch = await get(
    `${server}${path}${path.includes("?") ? "&" : "?"}watch=1&allowWatchBookmarks=true` +
      `&resourceVersion=${rv}`,
  );
  if (!watch.ok) throw new Error(`floor: watch ${path}: ${watch.status} ${await watch.text()}`);
  (async () => {
    for await (const _ of watch.body ?? []) { /* events, dropped */ }
  })();
}

const lease = env("FLOOR_LEASE");
const review = JSON.stringify({
  apiVersion: "authorization.k8s.io/v1",
  kind: "SelfSubjectAccessReview",
  spec: {
    resourceAttributes: { group: "coordination.k8s.io", resource: "leases", verb: "update" },
  },
});
setInterval(async () => {
  await (await fetch(`${server}${lease}`, { client: reads, headers })).body?.cancel();
  // A small write over the same connection, as a renewal is; a review creates nothing.
  const posted = await fetch(`${server}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, {
    client: reads,
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: review,
  });
  // Printed, not thrown: an interval's error would end the program after its figure is taken.
  if (!posted.ok) console.error(`floor: access review: ${posted.status}`);
  await posted.body?.cancel();
}, 2000);

for (let i = 0; i < 2; i++) {
  const s = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => new Response("ok"));
  await (await fetch(`http://127.0.0.1:${s.addr.port}/`)).text();
}
