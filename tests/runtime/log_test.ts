import assert from "node:assert/strict";
import { healthz, readyz } from "../../src/runtime/health.ts";
import { createLogger, LineBatcher, parseLogFormat, parseLogLevel } from "../../src/runtime/log.ts";
import { ManualClock } from "./helpers.ts";

Deno.test("JSON logs: one object a line, time from the clock, levels filtered, child fields", () => {
  const clock = new ManualClock(Date.UTC(2026, 4, 6, 7, 8, 9, 10));
  const lines: string[] = [];
  const log = createLogger({ clock, level: "info", sink: (l) => lines.push(l) }).child({
    controller: "x",
  });
  log.debug("hidden");
  log.info("hello", { key: "a/b", err: new Error("bad"), skip: undefined });
  log.error("oops");
  assert.deepEqual(lines, [
    '{"ts":"2026-05-06T07:08:09.010Z","level":"info","msg":"hello","controller":"x","key":"a/b","err":"bad"}',
    '{"ts":"2026-05-06T07:08:09.010Z","level":"error","msg":"oops","controller":"x"}',
  ]);
  assert.equal(log.enabled("debug"), false);
  assert.equal(log.enabled("warn"), true);
});

Deno.test("text logs quote values with spaces", () => {
  const clock = new ManualClock(0);
  const lines: string[] = [];
  const log = createLogger({ clock, format: "text", level: "debug", sink: (l) => lines.push(l) });
  log.warn("watch restarted", { reason: "too quiet", n: 3 });
  assert.deepEqual(lines, [
    '1970-01-01T00:00:00.000Z WARN  watch restarted reason="too quiet" n=3',
  ]);
});

Deno.test("log flags are parsed with clear errors", () => {
  assert.equal(parseLogLevel("DEBUG"), "debug");
  assert.equal(parseLogFormat("text"), "text");
  assert.throws(
    () => parseLogLevel("verbose"),
    /invalid log level "verbose": use one of debug, info, warn, error/,
  );
  assert.throws(() => parseLogFormat("xml"), /use one of json, text/);
});

Deno.test("probes: healthz while running, readyz only when synced and leading or standing by", () => {
  const base = {
    healthy: true,
    ready: false,
    leading: false,
    synced: false,
    queued: 0,
    inFlight: 0,
  };
  assert.equal(healthz(base).status, 200);
  assert.equal(healthz({ ...base, healthy: false }).status, 503);
  assert.deepEqual(readyz(base), { status: 503, body: "not ready: caches not synced yet\n" });
  assert.deepEqual(readyz({ ...base, synced: true }), {
    status: 503,
    body: "not ready: cannot reach the leader election Lease\n",
  });
  assert.deepEqual(readyz({ ...base, synced: true, ready: true }), {
    status: 200,
    body: "ok: standby\n",
  });
  assert.deepEqual(readyz({ ...base, synced: true, ready: true, leading: true }), {
    status: 200,
    body: "ok: leading\n",
  });
});

Deno.test("LineBatcher: lines wait for the delay, a full batch or an urgent line, in order", async () => {
  const writes: string[] = [];
  const dec = new TextDecoder();
  const b = new LineBatcher({
    write: (bytes) => writes.push(dec.decode(bytes)),
    delayMs: 40,
    maxChars: 100,
  });
  b.line("a");
  b.line("b");
  assert.deepEqual(writes, [], "nothing written before the delay");
  // The timer fires after the delay; a loaded machine may run it late, so wait for it.
  for (let i = 0; i < 200 && writes.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.deepEqual(writes, ["a\nb\n"], "one write for both, after the delay");
  b.line("c");
  b.line("warn", true);
  assert.deepEqual(writes.slice(1), ["c\nwarn\n"], "an urgent line takes the pending ones with it");
  b.line("x".repeat(60));
  b.line("y".repeat(60));
  assert.deepEqual(writes.slice(2), [`${"x".repeat(60)}\n${"y".repeat(60)}\n`], "a full batch");
  b.flush();
  assert.equal(writes.length, 3, "nothing pending, nothing written");
});

Deno.test("the operator's stderr lines are written on exit and on an uncaught error", async () => {
  const log = new URL("../../src/runtime/log.ts", import.meta.url).href;
  const run = async (end: string) => {
    const code = `import { createLogger } from "${log}";
      const l = createLogger({ clock: { now: () => 0 } });
      for (let i = 0; i < 3; i++) l.info("line " + i);
      ${end}`;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--quiet", code],
      stderr: "piped",
      stdout: "piped",
    }).output();
    return new TextDecoder().decode(out.stderr);
  };
  for (
    const end of [
      "Deno.exit(0);",
      "throw new Error('boom');",
      "Promise.reject(new Error('boom'));",
      "",
    ]
  ) {
    const err = await run(end);
    for (let i = 0; i < 3; i++) {
      assert.match(err, new RegExp(`"msg":"line ${i}"`), `${end || "returning"}: ${err}`);
    }
  }
});
