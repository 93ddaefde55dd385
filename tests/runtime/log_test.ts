import assert from "node:assert/strict";
import { healthz, readyz } from "../../src/runtime/health.ts";
import { createLogger, parseLogFormat, parseLogLevel } from "../../src/runtime/log.ts";
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
