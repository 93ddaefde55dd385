/**
 * The resolver of the operator's cluster DNS lookups, against a DNS server on loopback that
 * answers A queries for one name (as CoreDNS answers a Service's name) and NXDOMAIN otherwise, and
 * against a port where nothing answers.
 */
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { denoResolver, resolverName } from "../../src/kube/cluster_dns.ts";

const NAME = "keda-operator.keda-system.svc.cluster.local";

/** The question's name of a DNS query (labels from byte 12) and where the question ends. */
function question(q: Uint8Array): { name: string; end: number } {
  const labels: string[] = [];
  let i = 12;
  while (q[i] !== 0) {
    labels.push(new TextDecoder().decode(q.subarray(i + 1, i + 1 + q[i])));
    i += q[i] + 1;
  }
  return { name: labels.join(".").toLowerCase(), end: i + 5 };
}

/** Serves DNS on 127.0.0.1 (UDP): NAME is 10.96.0.20, the rest NXDOMAIN. Close it when done. */
async function serveDns(): Promise<{ port: number; asked: string[]; close: () => void }> {
  // node:dgram: Deno's own UDP sockets need --unstable-net.
  const socket = dgram.createSocket("udp4");
  const asked: string[] = [];
  socket.on("message", (q: Uint8Array, from: { port: number; address: string }) => {
    const { name, end } = question(q);
    asked.push(name);
    const found = name === NAME;
    const head = new Uint8Array(q.subarray(0, end));
    head[2] = 0x81; // a response, recursion desired
    head[3] = found ? 0x80 : 0x83; // recursion available; NXDOMAIN when not found
    head[7] = found ? 1 : 0; // answers
    head[8] =
      head[9] =
      head[10] =
      head[11] =
        0;
    const answer = found ? [0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 10, 96, 0, 20] : [];
    socket.send(new Uint8Array([...head, ...answer]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return { port: socket.address().port, asked, close: () => socket.close() };
}

Deno.test("cluster DNS resolver: asks the given server for the name, fully qualified", async () => {
  const { port, asked, close } = await serveDns();
  try {
    const resolve = denoResolver({ ipAddr: "127.0.0.1", port });
    const signal = new AbortController().signal;
    assert.deepEqual(await resolve(NAME, signal), ["10.96.0.20"]);
    assert.deepEqual(asked, [NAME], "one query, no search domain added");
    await assert.rejects(
      resolve("keda-operator.other.svc.cluster.local", signal),
      /^Error: no such name \(no A record found\)$/,
    );
    assert.equal(resolverName({ ipAddr: "127.0.0.1", port }), `the DNS server 127.0.0.1:${port}`);
    assert.equal(resolverName(), "the operator Pod's resolver");
  } finally {
    close();
  }
});

Deno.test("cluster DNS resolver: a server that does not answer is given up when aborted", async () => {
  // A bound UDP port that answers nothing.
  const silent = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => silent.bind(0, "127.0.0.1", resolve));
  try {
    const port = silent.address().port;
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(new Error("no answer within 0.3 s")), 300);
    const started = Date.now();
    await assert.rejects(
      denoResolver({ ipAddr: "127.0.0.1", port })(NAME, stop.signal),
      /no answer within 0\.3 s/,
    );
    clearTimeout(timer);
    assert.ok(Date.now() - started < 2_000, "stopped at the abort, not the resolver's own timeout");
  } finally {
    silent.close();
  }
});
