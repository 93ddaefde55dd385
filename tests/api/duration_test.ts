/** A fillInterval's two readings: milliseconds for the checks, a protobuf Duration for Envoy. */
import assert from "node:assert/strict";
import {
  goDurationProblem,
  MAX_GO_DURATION,
  parseFillInterval,
  parseGoDuration,
  protoFillInterval,
} from "../../src/api/duration.ts";

Deno.test("protoFillInterval: seconds stay, minutes become seconds, exactly at the largest", () => {
  assert.equal(protoFillInterval("30s"), "30s");
  assert.equal(protoFillInterval("2m"), "120s");
  assert.equal(protoFillInterval("999999999s"), "999999999s");
  assert.equal(protoFillInterval("9999999m"), "599999940s");
  for (const t of ["1s", "59s", "1m", "17m", "9999999m"]) {
    assert.equal(Number(protoFillInterval(t).slice(0, -1)) * 1000, parseFillInterval(t), t);
  }
});

Deno.test("parseGoDuration: up to Go's maximum, as time.ParseDuration; longer is refused, saying so", () => {
  // 2^63 - 1 nanoseconds, Go's largest Duration, in its units and in seconds alone.
  assert.equal(parseGoDuration(MAX_GO_DURATION), 9223372036854.775807);
  assert.notEqual(parseGoDuration("9223372036.854775807s"), undefined);
  for (
    const t of [
      "2562047h47m16.854775808s",
      "9223372036854775808ns",
      "2562048h",
      "153722867m1h",
      `1${"0".repeat(400)}h`,
    ]
  ) {
    assert.equal(parseGoDuration(t), undefined, t);
    assert.equal(
      goDurationProblem(t, "not one"),
      `${JSON.stringify(t)} is longer than Go's maximum duration ${MAX_GO_DURATION}`,
    );
  }
  assert.equal(goDurationProblem("1.5.5s", "not one"), "not one");
  assert.equal(goDurationProblem("1.5s", "not one"), undefined);
});
