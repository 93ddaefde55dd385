import assert from "node:assert/strict";
import { ApiError, type WatchEvent } from "../../src/runtime/cluster.ts";
import { decodeWatch, parseWatchLine, textReader, WATCH_READ_BYTES } from "../../src/kube/watch.ts";
import { type Seen, status, streamed } from "./fake_server.ts";
import { RateLimit, withCluster } from "./helpers.ts";

const obj = (name: string, rv: string) => ({
  apiVersion: "gateway.platform-project.io/v1alpha1",
  kind: "RateLimit",
  metadata: {
    name,
    namespace: "shop",
    resourceVersion: rv,
    managedFields: [{ manager: "kubectl" }],
  },
});

async function collect(iter: AsyncIterable<WatchEvent>): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  for await (const e of iter) out.push(e);
  return out;
}

Deno.test("watch streams events with bookmarks and ends when the server closes", async () => {
  await withCluster((_req: Seen) => {
    const s = streamed();
    s.send({ type: "ADDED", object: obj("a", "10") });
    s.send({ type: "MODIFIED", object: obj("a", "11") });
    s.send({
      type: "BOOKMARK",
      object: { kind: "RateLimit", apiVersion: "v", metadata: { resourceVersion: "12" } },
    });
    s.send({ type: "DELETED", object: obj("a", "13") });
    s.end();
    return s.response;
  }, async (cluster, server) => {
    const events = await collect(
      cluster.watch(
        RateLimit,
        {
          namespace: "shop",
          resourceVersion: "9",
          allowWatchBookmarks: true,
          timeoutSeconds: 290,
          labelSelector: "a=b",
        },
        new AbortController().signal,
      ),
    );
    const q = server.seen[0].query;
    assert.equal(
      server.seen[0].path,
      "/apis/gateway.platform-project.io/v1alpha1/namespaces/shop/ratelimits",
    );
    assert.equal(q.get("watch"), "true");
    assert.equal(q.get("resourceVersion"), "9");
    assert.equal(q.get("allowWatchBookmarks"), "true");
    assert.equal(q.get("timeoutSeconds"), "290");
    assert.equal(q.get("labelSelector"), "a=b");
    assert.deepEqual(events.map((e) => e.type), ["ADDED", "MODIFIED", "BOOKMARK", "DELETED"]);
    assert.equal(events[2].object.metadata.resourceVersion, "12");
    assert.deepEqual(events[0].object.metadata.managedFields, [{ manager: "kubectl" }]);
  });
});

Deno.test("a 410 ERROR event is passed through; an HTTP 410 throws ApiError(410)", async () => {
  let calls = 0;
  await withCluster(() => {
    calls++;
    if (calls === 2) return status(410, "Expired", "too old resource version: 1 (5)");
    const s = streamed();
    s.send({ type: "ADDED", object: obj("a", "4") });
    s.send({
      type: "ERROR",
      object: {
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        code: 410,
        reason: "Expired",
        message: "too old",
      },
    });
    s.end();
    return s.response;
  }, async (cluster) => {
    const signal = new AbortController().signal;
    const events = await collect(cluster.watch(RateLimit, { resourceVersion: "1" }, signal));
    assert.deepEqual(events.map((e) => e.type), ["ADDED", "ERROR"]);
    assert.equal((events[1].object as unknown as { code: number }).code, 410);
    const err = await collect(cluster.watch(RateLimit, { resourceVersion: "1" }, signal)).then(
      () => undefined,
      (e) => e,
    );
    assert.ok(err instanceof ApiError);
    assert.equal(err.code, 410);
    assert.equal(err.reason, "Expired");
  });
});

Deno.test("a stalled watch ends promptly when its signal aborts", async () => {
  const streams: ReturnType<typeof streamed>[] = [];
  await withCluster(() => {
    const s = streamed();
    streams.push(s);
    s.send({ type: "ADDED", object: obj("a", "4") });
    return s.response; // then silence: the connection stays open and sends nothing
  }, async (cluster) => {
    const ctl = new AbortController();
    const seen: string[] = [];
    const done = (async () => {
      for await (
        const e of cluster.watch(
          RateLimit,
          { resourceVersion: "1", timeoutSeconds: 3600 },
          ctl.signal,
        )
      ) {
        seen.push(e.type);
        // Abort later, while the next read waits on a connection that sends nothing.
        setTimeout(() => ctl.abort(), 20);
      }
    })();
    await done;
    assert.deepEqual(seen, ["ADDED"]);
  });
  streams.forEach((s) => s.end());
});

Deno.test("a watch aborted before the server answers ends without an error", async () => {
  const hang = Promise.withResolvers<Response>();
  await withCluster(() => hang.promise, async (cluster) => {
    const ctl = new AbortController();
    const done = collect(cluster.watch(RateLimit, { resourceVersion: "1" }, ctl.signal));
    setTimeout(() => ctl.abort(), 20);
    assert.deepEqual(await done, []);
    hang.resolve(new Response("{}"));
  });
});

Deno.test("a watch silent past its timeout plus grace fails with ApiError(0, Timeout)", async () => {
  const streams: ReturnType<typeof streamed>[] = [];
  await withCluster(() => {
    const s = streamed();
    streams.push(s);
    return s.response;
  }, async (cluster) => {
    const err = await collect(
      cluster.watch(
        RateLimit,
        { resourceVersion: "1", timeoutSeconds: 0 },
        new AbortController().signal,
      ),
    ).then(() => undefined, (e) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.code, 0);
    assert.equal(err.reason, "Timeout");
    assert.match(err.message, /stalled/);
  }, { watchGraceMs: 50 });
  streams.forEach((s) => s.end());
});

Deno.test("watch lines split across chunks are joined; bad lines are an error", async () => {
  await withCluster(() => {
    const enc = new TextEncoder();
    const line = JSON.stringify({ type: "ADDED", object: obj("a", "4") }) + "\n";
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(enc.encode(line.slice(0, 10)));
        c.enqueue(enc.encode(line.slice(10) + line.slice(0, 5)));
        c.enqueue(enc.encode(line.slice(5)));
        c.close();
      },
    });
    return new Response(body);
  }, async (cluster) => {
    const events = await collect(
      cluster.watch(RateLimit, { resourceVersion: "1" }, new AbortController().signal),
    );
    assert.deepEqual(events.map((e) => e.object.metadata.name), ["a", "a"]);
  });
  assert.throws(
    () => parseWatchLine("{not json"),
    (e) => e instanceof ApiError && e.reason === "InvalidWatchEvent",
  );
  assert.throws(() => parseWatchLine('{"type":"WHAT","object":{}}'), /unknown event/);
});

Deno.test("decodeWatch holds nothing of the events it yielded while the watch stays open", async () => {
  // 4,000 events of 8 KB: a watch that kept each chunk (a race against a promise of the whole
  // watch's abort did) grows the heap by about 34 MB; one that keeps nothing, by about 1 MB.
  const script = new URL("./scripts/watch_heap.ts", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", script, "4000"],
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  const grownMb = Number(text.trim());
  assert.ok(grownMb < 8, `the heap grew ${grownMb} MB over 4,000 events`);
});

/** A byte stream like fetch's body: `chunks` one a pull, recording the size of each read offered. */
function byteBody(chunks: Uint8Array[], offered: number[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    type: "bytes",
    autoAllocateChunkSize: 65536,
    pull(controller) {
      const request = controller.byobRequest!;
      const view = request.view as Uint8Array;
      offered.push(view.byteLength);
      const chunk = chunks.shift();
      if (!chunk) {
        controller.close();
        request.respond(0);
        return;
      }
      view.set(chunk);
      request.respond(chunk.length);
    },
  });
}

Deno.test("a watch reads a byte stream into its own small buffer, joining UTF-8 split across reads", async () => {
  const line = new TextEncoder().encode(
    '{"type":"ADDED","object":{"metadata":{"name":"café"}}}\n',
  );
  const cut = line.indexOf(0xc3) + 1; // inside the two bytes of é
  const offered: number[] = [];
  const body = byteBody([line.slice(0, cut), line.slice(cut)], offered);
  const events = await Array.fromAsync(
    decodeWatch({ body, close: () => {} }, 5_000, new AbortController().signal),
  );
  assert.deepEqual(events.map((e) => e.object.metadata.name), ["café"]);
  // Never the stream's own 64 KiB: a quiet watch holds only WATCH_READ_BYTES.
  assert.ok(offered.length >= 2);
  assert.ok(offered.every((n) => n === WATCH_READ_BYTES), offered.join(", "));
});

Deno.test("textReader: a stream that is not a byte stream is read too, and a cut character ends as U+FFFD", async () => {
  const bytes = new TextEncoder().encode("ab\u00e9");
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(bytes.slice(0, bytes.length - 1));
      c.close();
    },
  });
  const reader = textReader(body);
  let text = "";
  for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
  assert.equal(text, "ab\ufffd");
});

Deno.test("a busy watch uses one idle timer, not one a read, and still stalls when silent", async () => {
  const enc = new TextEncoder();
  const line = (i: number) =>
    enc.encode(JSON.stringify({ type: "ADDED", object: obj(`o${i}`, String(i)) }) + "\n");
  // 300 chunks, 1 ms apart: 300 reads over longer than the idle deadline, none of them idle.
  let sent = 0;
  let stall: (() => void) | undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (sent === 300) return new Promise<void>((r) => stall = r);
      await new Promise((r) => setTimeout(r, 1));
      c.enqueue(line(sent++));
    },
  });
  const realSetTimeout = globalThis.setTimeout;
  let timers = 0;
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    timers++;
    return realSetTimeout(fn, ms);
  }) as typeof setTimeout;
  const abort = new AbortController();
  const seen: string[] = [];
  let timersAtLast = 0;
  let readingMs = 0;
  const idleMs = 500;
  const started = performance.now();
  let err: unknown;
  try {
    for await (const e of decodeWatch({ body, close: () => {} }, idleMs, abort.signal)) {
      seen.push(e.object.metadata.name);
      if (seen.length === 300) {
        timersAtLast = timers;
        readingMs = performance.now() - started;
      }
    }
  } catch (e) {
    err = e;
  } finally {
    globalThis.setTimeout = realSetTimeout;
    stall?.();
  }
  assert.equal(seen.length, 300);
  // The stream's own 1 ms sleeps are 300 of the timers; the watch sets one an idle period at
  // most (a slow machine reads the 300 over more periods), not one a read.
  const bound = Math.ceil(readingMs / idleMs) + 2;
  assert.ok(
    timersAtLast - 300 <= bound,
    `the watch set ${timersAtLast - 300} timers for 300 reads over ${Math.round(readingMs)} ms`,
  );
  assert.ok(err instanceof ApiError && err.reason === "Timeout", `silent after: ${err}`);
  assert.ok(performance.now() - started >= idleMs);
});
