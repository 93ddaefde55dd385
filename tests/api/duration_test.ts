/** A fillInterval's two readings: milliseconds for the checks, a protobuf Duration for Envoy. */
import assert from "node:assert/strict";
import { parseFillInterval, protoFillInterval } from "../../src/api/duration.ts";

Deno.test("protoFillInterval: seconds stay, minutes become seconds, exactly at the largest", () => {
  assert.equal(protoFillInterval("30s"), "30s");
  assert.equal(protoFillInterval("2m"), "120s");
  assert.equal(protoFillInterval("999999999s"), "999999999s");
  assert.equal(protoFillInterval("9999999m"), "599999940s");
  for (const t of ["1s", "59s", "1m", "17m", "9999999m"]) {
    assert.equal(Number(protoFillInterval(t).slice(0, -1)) * 1000, parseFillInterval(t), t);
  }
});
