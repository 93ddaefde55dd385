import assert from "node:assert/strict";
import { join } from "node:path";
import {
  classifyFiles,
  findTestFiles,
  mergeJunit,
  missingReport,
  parseLaneArgs,
  planBatches,
  REST_TARGETS,
  runLanes,
  TAIL_LINES,
} from "../../tools/test_lanes.ts";
import { TARGETS } from "../../tools/build.ts";

/** Writes `text` to `p` below `dir`, making its directories. */
function writeIn(dir: string, p: string, text: string): Promise<void> {
  return Deno.mkdir(join(dir, p, ".."), { recursive: true }).then(() =>
    Deno.writeTextFile(join(dir, p), text)
  );
}

/** Whether the test `name` has run: it writes `<name>.ran` in `dir` when it does. */
function ranIn(dir: string, name: string): boolean {
  try {
    return Deno.statSync(join(dir, `${name}.ran`)).isFile;
  } catch {
    return false;
  }
}

Deno.test("test lanes: flags are checked; an unknown flag or a bad lane count is an error", () => {
  assert.deepEqual(parseLaneArgs(["tests/", "--lanes=3", "--junit-path=x.xml"]), {
    roots: ["tests/"],
    lanes: 3,
    junitPath: "x.xml",
    list: false,
  });
  assert.equal(parseLaneArgs(["t", "--late-after=b.rc"]).lateAfter, "b.rc");
  assert.equal(parseLaneArgs(["t", "--built-dir=built"]).builtDir, "built");
  assert.equal(parseLaneArgs(["t", "--late-lanes=2"]).lateLanes, 2);
  assert.throws(() => parseLaneArgs(["t", "--late-lanes=9"]), /--late-lanes must be/);
  assert.throws(() => parseLaneArgs(["t", "--late-after"]), /unknown flag --late-after/);
  assert.throws(() => parseLaneArgs(["tests/", "--lane=3"]), /unknown flag --lane=3/);
  assert.throws(() => parseLaneArgs(["tests/", "--lanes=0"]), /--lanes must be/);
  assert.throws(() => parseLaneArgs(["tests/", "--lanes=two"]), /--lanes must be/);
  assert.throws(() => parseLaneArgs(["--list"]), /name at least one/);
});

Deno.test("test lanes: real-node and heavy files get a process each, the rest batch by directory and needs, heaviest first", () => {
  const needs = (i: number) => i === 8 ? ["istio-check"] : i === 9 ? ["helm"] : [];
  const light = Array.from({ length: 10 }, (_, i) => ({
    path: `tests/api/a${i}_test.ts`,
    alone: false,
    late: needs(i).length > 0,
    needs: needs(i),
  }));
  const plan = planBatches([
    ...light,
    { path: "tests/e2e/keda_real_test.ts", alone: true, late: true, needs: ["keda"] },
    { path: "tests/e2e/modules_test.ts", alone: false, late: false, needs: [] },
  ], { "tests/e2e/modules_test.ts": 120, "tests/e2e/keda_real_test.ts": 200 });
  assert.deepEqual(plan.map((b) => [b.files.length, b.alone, b.late, b.weight, b.needs]), [
    [1, true, true, 200, ["keda"]],
    [1, false, false, 120, []],
    [8, false, false, 16, []],
    // Late files of one directory that need different targets are apart.
    [1, false, true, 2, ["istio-check"]],
    [1, false, true, 2, ["helm"]],
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
    const write = (p: string, text: string) => writeIn(dir, p, text);
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
    // A file that uses the rest of the build (here through a helper of tests/ it imports) waits for
    // the background build's file; the others do not. Each test writes when it ran.
    const stamp = (name: string, holdMs = 0) =>
      `Deno.test("${name}", async () => { Deno.writeTextFileSync("${name}.ran", String(Date.now())); ` +
      `await new Promise((r) => setTimeout(r, ${holdMs})); });\n`;
    await write("t/a_test.ts", stamp("a"));
    await write("t/real_test.ts", `// realNode: ${"true"}\n${stamp("r")}`);
    await write("tests/mesh_helper.ts", `export const m = { ${"mesh"}: true };\n`);
    // Each late file holds its lane 4 s: with a second lane once the file is there, they overlap.
    await write("t/late_test.ts", `import "../tests/mesh_helper.ts";\n${stamp("late", 4000)}`);
    // (another directory: light files of one directory share a process)
    await write(
      "t/x/later_test.ts",
      `import "../../tests/mesh_helper.ts";\n${stamp("later", 4000)}`,
    );
    const classes = await classifyFiles(
      ["t/a_test.ts", "t/late_test.ts", "t/real_test.ts"],
      dir,
    );
    assert.deepEqual(classes.map((f) => [f.path, f.alone, f.late]), [
      ["t/a_test.ts", false, false],
      ["t/late_test.ts", false, true],
      ["t/real_test.ts", true, false],
    ]);
    // The build's file is written once the other files have run (or after 60 s, if they waited).
    const t0 = Date.now();
    let written = 0;
    const ranYet = (name: string) => ranIn(dir, name);
    const timer = setInterval(() => {
      if ((ranYet("a") && ranYet("r")) || Date.now() - t0 > 60_000) {
        clearInterval(timer);
        written = Date.now();
        Deno.writeTextFileSync(join(dir, "build.rc"), "0\n");
      }
    }, 100);
    try {
      assert.equal(
        await runLanes(
          { roots: ["t"], lanes: 1, lateLanes: 2, list: false, lateAfter: "build.rc" },
          dir,
        ),
        0,
      );
    } finally {
      clearInterval(timer);
    }
    const ran = (name: string) => Number(Deno.readTextFileSync(join(dir, `${name}.ran`)));
    assert.ok(written > 0 && written - t0 < 60_000, "the other files ran before the build's file");
    assert.ok(ran("a") < written && ran("r") < written, "the other files did not wait");
    assert.ok(ran("late") >= written && ran("later") >= written, "the late files waited");
    assert.ok(
      Math.abs(ran("late") - ran("later")) < 4000,
      "the late files ran side by side in two lanes",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("test lanes: each target of the rest a file may need is one ./deno task build makes", () => {
  const names = TARGETS.map((t) => t.name);
  for (const { target } of REST_TARGETS) assert.ok(names.includes(target), target);
  // Part 1 of CI's build (.ci/run) is not waited for: it ends before the tests start.
  assert.deepEqual(
    names.slice(names.indexOf("istio-check")),
    REST_TARGETS.map((t) => t.target),
  );
});

Deno.test("test lanes: with --built-dir a late file starts once what it needs is built, not the whole rest", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lanes-built-" });
  try {
    const write = (p: string, text: string) => writeIn(dir, p, text);
    const stamp = (name: string) =>
      `Deno.test("${name}", () => { Deno.writeTextFileSync("${name}.ran", String(Date.now())); });\n`;
    await write("t/a_test.ts", stamp("a"));
    await write("tests/mesh_helper.ts", `export const m = { ${"mesh"}: true };\n`);
    await write("t/mesh_test.ts", `import "../tests/mesh_helper.ts";\n${stamp("mesh")}`);
    await write("t/y/helm_test.ts", `// uses ${"ensure"}Helm\n${stamp("helm")}`);
    const classes = await classifyFiles(["t/a_test.ts", "t/mesh_test.ts", "t/y/helm_test.ts"], dir);
    assert.deepEqual(classes.map((f) => [f.path, f.needs]), [
      ["t/a_test.ts", []],
      ["t/mesh_test.ts", ["istio-check"]],
      ["t/y/helm_test.ts", ["helm"]],
    ]);
    const ranYet = (name: string) => ranIn(dir, name);
    // istiod's target ends once the first file ran; the whole rest once the mesh file ran (or
    // after 60 s, had it waited for the whole rest).
    const t0 = Date.now();
    let istioAt = 0, restAt = 0;
    await Deno.mkdir(join(dir, "built"));
    const timer = setInterval(() => {
      if (istioAt === 0 && ranYet("a")) {
        istioAt = Date.now();
        Deno.writeTextFileSync(join(dir, "built/istio-check"), "0\n");
      }
      if (istioAt > 0 && (ranYet("mesh") || Date.now() - t0 > 60_000)) {
        clearInterval(timer);
        restAt = Date.now();
        Deno.writeTextFileSync(join(dir, "build.rc"), "0\n");
      }
    }, 100);
    try {
      assert.equal(
        await runLanes(
          { roots: ["t"], lanes: 1, list: false, lateAfter: "build.rc", builtDir: "built" },
          dir,
        ),
        0,
      );
    } finally {
      clearInterval(timer);
    }
    const ran = (name: string) => Number(Deno.readTextFileSync(join(dir, `${name}.ran`)));
    assert.ok(istioAt > 0 && restAt > 0);
    assert.ok(ran("mesh") >= istioAt, "the mesh file waited for istio-check");
    assert.ok(ran("mesh") < restAt, "the mesh file did not wait for the whole rest");
    assert.ok(ran("helm") >= restAt, "the helm file waited for the whole rest");
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
  const file = (l: string) => l.replace(/^[R-]( late)? \d+s /, "");
  const real = lines.filter((l) => l.startsWith("R ")).map(file);
  const late = lines.filter((l) => / late /.test(l)).map(file);
  for (const f of ["tests/e2e/keda_real_test.ts", "tests/istio/dev_mesh_test.ts"]) {
    assert.ok(late.includes(f), `${f} waits for the rest of the build`);
  }
  for (const f of ["tests/istio/accepted_test.ts", "tests/deploy/chart_test.ts"]) {
    assert.ok(late.includes(f), `${f} waits for the rest of the build`);
  }
  assert.ok(!late.includes("tests/e2e/modules_test.ts"), "a kwok-only suite does not wait");
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

Deno.test("test lanes: a failed file's last lines are shown again at the end of the run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lanes-tail-" });
  try {
    // (two directories: light files of one directory share a process)
    await Deno.mkdir(join(dir, "t"));
    await Deno.mkdir(join(dir, "u"));
    await Deno.writeTextFile(join(dir, "u/a_test.ts"), `Deno.test("a", () => {});\n`);
    // More lines than the tail holds, then the figure and the error that explain the failure.
    await Deno.writeTextFile(
      join(dir, "t/b_test.ts"),
      `Deno.test("b", () => {\n` +
        `  for (let i = 0; i < ${TAIL_LINES * 2}; i++) console.log("noise " + i);\n` +
        `  console.log("[faults] duplicates 1");\n` +
        `  throw new Error("no duplicate write");\n});\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("../../tools/test_lanes.ts", import.meta.url).pathname, "t", "u"],
      cwd: dir,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 1);
    const text = new TextDecoder().decode(out.stdout);
    const end = text.slice(text.lastIndexOf("processes passed"));
    const shown = end.split("\n").filter((l) => l.startsWith("  | "));
    assert.ok(shown.length > 0 && shown.length <= TAIL_LINES, `${shown.length} lines shown`);
    assert.match(end, /lanes: the last \d+ lines of t\/b_test\.ts \(exit 1\):/);
    assert.match(end, / {2}\| \[faults\] duplicates 1/);
    assert.match(end, / {2}\| .*no duplicate write/);
    assert.doesNotMatch(end, /noise 0\b/, "only the tail");
    assert.doesNotMatch(end, /lines of u\/a_test\.ts/, "a file that passed is not shown");
    assert.match(end, /lanes: FAILED \(exit 1\): t\/b_test\.ts\s*$/, "the verdict stays last");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
