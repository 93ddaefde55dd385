import assert from "node:assert/strict";
import { join } from "node:path";
import {
  findTestFiles,
  mergeJunit,
  missingReport,
  parseLaneArgs,
  planBatches,
  runLanes,
} from "../../tools/test_lanes.ts";

Deno.test("test lanes: flags are checked; an unknown flag or a bad lane count is an error", () => {
  assert.deepEqual(parseLaneArgs(["tests/", "--lanes=3", "--junit-path=x.xml"]), {
    roots: ["tests/"],
    lanes: 3,
    junitPath: "x.xml",
    list: false,
  });
  assert.equal(parseLaneArgs(["t", "--others-after=b.rc"]).othersAfter, "b.rc");
  assert.throws(() => parseLaneArgs(["t", "--others-after"]), /unknown flag --others-after/);
  assert.throws(() => parseLaneArgs(["tests/", "--lane=3"]), /unknown flag --lane=3/);
  assert.throws(() => parseLaneArgs(["tests/", "--lanes=0"]), /--lanes must be/);
  assert.throws(() => parseLaneArgs(["tests/", "--lanes=two"]), /--lanes must be/);
  assert.throws(() => parseLaneArgs(["--list"]), /name at least one/);
});

Deno.test("test lanes: real-node and heavy files get a process each, the rest batch by directory, heaviest first", () => {
  const light = Array.from({ length: 10 }, (_, i) => ({
    path: `tests/api/a${i}_test.ts`,
    alone: false,
  }));
  const plan = planBatches([
    ...light,
    { path: "tests/e2e/keda_real_test.ts", alone: true },
    { path: "tests/e2e/modules_test.ts", alone: false },
  ], { "tests/e2e/modules_test.ts": 120, "tests/e2e/keda_real_test.ts": 200 });
  assert.deepEqual(plan.map((b) => [b.files.length, b.alone, b.weight]), [
    [1, true, 200],
    [1, false, 120],
    [8, false, 16],
    [2, false, 4],
  ]);
});

Deno.test("test lanes: JUnit reports merge with summed counts; a missing report is one failure", () => {
  const a =
    `<?xml version="1.0"?><testsuites name="x" tests="2" failures="0" errors="0" time="1.5">` +
    `<testsuite name="./a_test.ts"><testcase name="a"/></testsuite></testsuites>`;
  const merged = mergeJunit([a, missingReport(["b_test.ts"], 1)]);
  assert.match(
    merged,
    /<testsuites name="deno test \(lanes\)" tests="3" failures="1" errors="0" time="1.500">/,
  );
  assert.match(merged, /<testsuite name="\.\/a_test\.ts">/);
  assert.match(merged, /<failure message="exited with code 1 without a JUnit report"\/>/);
});

Deno.test("test lanes: a run finds deno test's files, runs every one, fails when one fails, and merges the reports", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lanes-test-" });
  try {
    const write = (p: string, text: string) =>
      Deno.mkdir(join(dir, p, ".."), { recursive: true }).then(() =>
        Deno.writeTextFile(join(dir, p), text)
      );
    await write("t/a_test.ts", `Deno.test("a", () => {});\nDeno.test("a2", () => {});\n`);
    await write("t/b.test.ts", `Deno.test("b", () => { throw new Error("b fails"); });\n`);
    // The marker is built here, so that this file itself is not one the marker sends to lane R.
    await write("t/real_test.ts", `// realNode: ${"true"}\nDeno.test("r", () => {});\n`);
    await write("t/helper.ts", `Deno.test("never run: not a test file name", () => {});\n`);
    await write("t/.hidden/c_test.ts", `Deno.test("hidden", () => {});\n`);
    assert.deepEqual(await findTestFiles(["t"], dir), [
      "t/a_test.ts",
      "t/b.test.ts",
      "t/real_test.ts",
    ]);
    const code = await runLanes(
      { roots: ["t"], lanes: 2, junitPath: "out/j.xml", list: false },
      dir,
    );
    assert.equal(code, 1, "one file failed");
    const junit = await Deno.readTextFile(join(dir, "out/j.xml"));
    assert.match(junit, /tests="4" failures="1"/);
    for (const name of ["a", "a2", "b", "r"]) {
      assert.match(junit, new RegExp(`testcase name="${name}"`));
    }
    const durations = JSON.parse(
      await Deno.readTextFile(join(dir, ".cache/ci/test-durations.json")),
    );
    assert.deepEqual(Object.keys(durations).sort(), [
      "t/a_test.ts",
      "t/b.test.ts",
      "t/real_test.ts",
    ]);
    await Deno.remove(join(dir, "t/b.test.ts"));
    // The other lanes wait for the background build's file; lane R does not.
    const t0 = Date.now();
    let written = 0;
    const timer = setTimeout(() => {
      written = Date.now() - t0;
      Deno.writeTextFileSync(join(dir, "build.rc"), "0\n");
    }, 2_000);
    try {
      assert.equal(
        await runLanes({ roots: ["t"], lanes: 1, list: false, othersAfter: "build.rc" }, dir),
        0,
      );
    } finally {
      clearTimeout(timer);
    }
    assert.ok(written >= 2_000, "the run ended only after the file appeared");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("test lanes: shown test commands run (docs/testing.md)", async () => {
  const page = await Deno.readTextFile(new URL("../../docs/testing.md", import.meta.url));
  const shown = [...page.matchAll(/^(\.\/deno task test --[^\s#]+)/gm)].map((m) => m[1]);
  assert.deepEqual(shown, ["./deno task test --list"]);
  const out = await new Deno.Command("bash", {
    args: ["-c", shown[0]],
    cwd: new URL("../..", import.meta.url),
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert.equal(out.code, 0);
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  assert.match(lines[0], /^lanes: \d+ files in \d+ processes; real-node lane \d+ files/);
  const real = lines.filter((l) => l.startsWith("R ")).map((l) => l.split(" ").slice(2).join(" "));
  for (
    const f of [
      "tools/cluster/real_node_test.ts",
      "tests/e2e/keda_real_test.ts",
      "tests/e2e/dev_test.ts",
      "tests/istio/dev_mesh_test.ts",
    ]
  ) {
    assert.ok(real.includes(f), `${f} in lane R`);
  }
  assert.ok(!real.includes("tests/e2e/modules_test.ts"), "a kwok-only suite is not in lane R");
  assert.ok(lines.some((l) => l.endsWith(" tests/tools/test_lanes_test.ts")));
});
