/**
 * The scenario reader refuses what it would otherwise skip: a key it does not know (an assertion
 * that would never run) at any level, with its path and a guess; a key an expectation would not
 * check; a value past its bound (seed, virtual time, counts); an unknown fault kind, named with the
 * known ones. The CLI refuses seeds past 2^53−1 the same way: exit 2, one line.
 */
import assert from "node:assert/strict";
import { runSim } from "../../src/cli/sim.ts";
import { faultsFor } from "../../sim/fault_choice.ts";
import { MAX_SEED } from "../../sim/prng.ts";
import { expectedObject } from "../../sim/scenario/expect.ts";
import { parseScenario } from "../../sim/scenario/format.ts";
import { runScenario } from "../../sim/scenario/run.ts";

/** The message parseScenario throws for `text` (fails when it parses). */
function refusal(text: string): string {
  try {
    parseScenario(text, "f.yaml");
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail(`parsed:\n${text}`);
}

const STEP = "steps:\n  - at: 1s\n";
const REQUEST = "    requests: [{to: gateway, path: /ip}]\n";

Deno.test("strict: an unknown key at every level is refused with its path and a guess", () => {
  assert.equal(
    refusal(`name: x\nsed: 3\n${STEP}`),
    "f.yaml: sed: unknown field; did you mean seed?",
  );
  assert.equal(
    refusal(`name: x\n${STEP}${REQUEST}    expectResponse: [{status: 429}]\n`),
    "f.yaml: steps[0].expectResponse: unknown field; did you mean expectResponses?",
  );
  assert.equal(
    refusal(`name: x\n${STEP}${REQUEST}    expectResponses: [{stauts: 429}]\n`),
    "f.yaml: steps[0].expectResponses[0].stauts: unknown field; did you mean status?",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    expect: [{kind: Pod, name: a, absnet: true, conditons: []}]\n`),
    "f.yaml: steps[0].expect[0].absnet: unknown field; did you mean absent?; " +
      "steps[0].expect[0].conditons: unknown field; did you mean conditions?",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    fault: {kind: crash, restartAfer: 2s}\n`),
    "f.yaml: steps[0].fault.restartAfer: unknown field; did you mean restartAfter?",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    fault: [{kind: apiError, code: 500, target: {knd: Pod}}]\n`),
    "f.yaml: steps[0].fault[0].target.knd: unknown field; did you mean kind?",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    delete: {kind: Pod, name: a, namspace: b}\n`),
    "f.yaml: steps[0].delete.namspace: unknown field; did you mean namespace?",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    requests: [{to: gateway, path: /ip, header: {a: b}}]\n`),
    "f.yaml: steps[0].requests[0].header: unknown field; did you mean headers?",
  );
  // Objects to apply stay loose: the simulated API server validates them.
  const applied = parseScenario(
    `name: x\n${STEP}    apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {}}\n`,
  );
  assert.deepEqual(applied.steps[0].apply?.[0], {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "a" },
    data: {},
  });
});

Deno.test("strict: an expectation matches top-level object fields, and only keys it checks", () => {
  const e = parseScenario(
    `name: x\n${STEP}    expect:\n      - {kind: Secret, namespace: a, name: b, type: Opaque, ` +
      `data: {k: dg==}, immutable: true}\n`,
  ).steps[0].expect![0];
  assert.deepEqual(expectedObject(e), { data: { k: "dg==" }, type: "Opaque", immutable: true });
  assert.equal(
    refusal(`name: x\n${STEP}    expect: [{kind: Pod, namespace: a, status: {phase: Running}}]\n`),
    "f.yaml: steps[0].expect[0].status: not checked with counting objects (count, or no name)",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    expect: [{kind: Pod, name: a, count: 2}]\n`),
    "f.yaml: steps[0].expect[0].name: not checked with counting objects (count, or no name)",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    expect: [{kind: Pod, name: a, absent: true, spec: {}}]\n`),
    "f.yaml: steps[0].expect[0].spec: not checked with absent: true",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    expect: [{kind: Pod, name: a, seen: true, noConditions: [X]}]\n`),
    "f.yaml: steps[0].expect[0].noConditions: not checked with seen: true",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    expect: [{kind: Pod, name: a, transient: true, spec: {}}]\n`),
    "f.yaml: steps[0].expect[0].transient: only with seen: true",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    expect: [{kind: Pod, name: a, absent: true, transient: true}]\n`),
    "f.yaml: steps[0].expect[0].transient: not checked with absent: true",
  );
  assert.equal(
    parseScenario(
      `name: x\n${STEP}    expect: [{kind: Pod, name: a, seen: true, transient: true}]\n`,
    ).steps[0].expect![0].transient,
    true,
  );
});

Deno.test("bounds: seed 0 to 2^53-1, virtual time at most 24h, counts at most 1000, requests 100000", () => {
  assert.equal(parseScenario(`name: x\nseed: ${MAX_SEED}\n${STEP}`).seed, MAX_SEED);
  assert.match(refusal(`name: x\nseed: 9007199254740992\n${STEP}`), /^f\.yaml: seed: .*2\^53/);
  assert.match(refusal(`name: x\nseed: -1\n${STEP}`), /^f\.yaml: seed: -1 is below the minimum 0/);
  assert.equal(parseScenario("name: x\nsteps:\n  - at: 24h\n").steps[0].at, 86_400_000);
  assert.equal(
    refusal("name: x\nsteps:\n  - at: 1000h\n"),
    "f.yaml: steps[0].at: 1000h is above the maximum 24h",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    fault: {kind: clockJump, by: 24h1s}\n`),
    "f.yaml: steps[0].fault.by: 24h1s is above the maximum 24h",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    requests: [{to: gateway, path: /ip, count: 1e9}]\n`),
    "f.yaml: steps[0].requests[0].count: 1000000000 is above the maximum 1000",
  );
  assert.equal(
    refusal(
      `name: x\n${STEP}    requests: [${"{to: gateway, path: /ip, count: 1000}, ".repeat(11)}]\n`,
    ),
    "f.yaml: steps[0].requests: 11000 requests (counts expanded) is above the maximum 10000 a step",
  );
  // Ten full steps are taken; an eleventh, here a YAML alias of the first, is one too many.
  const full = `requests: [${"{to: gateway, path: /ip, count: 1000}, ".repeat(10)}]`;
  const steps = (n: number) =>
    `name: x\nsteps:\n  - &s {at: 0s, ${full}}\n${"  - *s\n".repeat(n - 1)}`;
  assert.equal(parseScenario(steps(10)).steps.length, 10);
  assert.equal(
    refusal(steps(11)),
    "f.yaml: steps: 110000 requests (counts expanded, all steps) is above the maximum 100000 a scenario",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    fault: {kind: apiError, code: 200, target: {}}\n`),
    "f.yaml: steps[0].fault.code: 200 is below the minimum 400",
  );
});

Deno.test("faults: an unknown kind is named with the known ones, a missing target too", () => {
  assert.equal(
    refusal(`name: x\n${STEP}    fault: {kind: wachDrop, target: {kind: Pod}}\n`),
    'f.yaml: steps[0].fault.kind: unknown fault kind "wachDrop" (did you mean watchDrop?); ' +
      "known: apiError, replicaFailure, slowDeployment, crash, clockJump, watchDrop, watchStall, " +
      "watchGone, proxyReject, proxyDisconnect, istiodUnreachable, compact, partition, apiServerDown",
  );
  // The mesh's fault kinds are as strict: a misspelt key is named with the key meant.
  assert.equal(
    refusal(`name: x
${STEP}    fault: {kind: proxyReject, target: {namespace: demo}, cuont: 2}
`),
    "f.yaml: steps[0].fault.cuont: unknown field; did you mean count?",
  );
  assert.equal(
    refusal(`name: x
${STEP}    fault: {kind: proxyDisconnect, target: {nmae: httpbin}}
`),
    "f.yaml: steps[0].fault.target.nmae: unknown field; did you mean name?",
  );
  assert.equal(
    refusal(`name: x
${STEP}    fault: {kind: istiodUnreachable, fro: 1m}
`),
    "f.yaml: steps[0].fault.fro: unknown field; did you mean for?",
  );
  assert.equal(
    refusal(`name: x
${STEP}    fault: {kind: proxyReject}
`),
    "f.yaml: steps[0].fault.target: required for proxyReject",
  );
  assert.equal(
    refusal(
      "name: x\nsteps:\n  - at: 1s\n  - at: 2s\n  - at: 3s\n" +
        "    fault: {kind: apiError, code: 500}\n",
    ),
    "f.yaml: steps[2].fault.target: required for apiError",
  );
  assert.equal(
    refusal(`name: x\n${STEP}    fault: {kind: compact, target: {}}\n`),
    "f.yaml: steps[0].fault.target.kind: is required (expected string)",
  );
  assert.equal(
    refusal(`name: x\nfaults: {watchDorp: 0.2}\n${STEP}`),
    "f.yaml: faults.watchDorp: unknown fault kind (did you mean watchDrop?); known: conflict, " +
      "throttle, serverError, timeout, watchDrop, watchStall, watchGone, goneAs, historySize, " +
      "crashes, replicaFailure, slowDeployment, clockJumps, slowWrite, planCrashes, leaseLoss, " +
      "standbys, ownedDeletes, proxyRejects, proxyNeverConnects, brokenFilters, istiodOutages, " +
      "metricsOutages, dnsOutages, listOutages",
  );
  assert.equal(
    refusal(`name: x
faults: {proxyReject: 0.2}
${STEP}`),
    "f.yaml: faults.proxyReject: unknown fault kind (did you mean proxyRejects?); known: " +
      "conflict, throttle, serverError, timeout, watchDrop, watchStall, watchGone, goneAs, " +
      "historySize, crashes, replicaFailure, slowDeployment, clockJumps, slowWrite, planCrashes, " +
      "leaseLoss, standbys, ownedDeletes, proxyRejects, proxyNeverConnects, brokenFilters, " +
      "istiodOutages, metricsOutages, dnsOutages, listOutages",
  );
  assert.equal(
    refusal(`name: x\nfaults: {watchDrop: 2, crashes: 1e9}\n${STEP}`),
    "f.yaml: faults.watchDrop: 2 is above the maximum 1; " +
      "faults.crashes: 1000000000 is above the maximum 100",
  );
  for (const faults of ["sometimes", "3", "[none]"]) {
    assert.equal(
      refusal(`name: x\nfaults: ${faults}\n${STEP}`),
      "f.yaml: faults: must be none, default, or a map of fault kind to rate",
    );
  }
  assert.deepEqual(
    parseScenario(`name: x\nfaults: {historySize: 5, goneAs: throw}\n${STEP}`).faults,
    { historySize: 5, goneAs: "throw" },
  );
  // The same check where the simulator takes a mix: no run starts with a setting it ignores.
  assert.throws(
    () => faultsFor({ watchDorp: 0.2 }, 1),
    /^Error: faults\.watchDorp: unknown fault kind \(did you mean watchDrop\?\)/,
  );
});

async function sim(args: string[]): Promise<{ code: number; lines: string[]; errors: string[] }> {
  const lines: string[] = [];
  const errors: string[] = [];
  const code = await runSim(args, { out: (l) => lines.push(l), err: (l) => errors.push(l) });
  return { code, lines, errors };
}

Deno.test("cli sim: seeds past 2^53-1 are refused: exit 2, one line, no empty run", async () => {
  const help = " See 'mod.ts sim --help'.";
  assert.deepEqual(await sim(["--seed", "9007199254740992"]), {
    code: 2,
    lines: [],
    errors: [`error: --seed: 9007199254740992 is above the maximum ${MAX_SEED} (2^53-1).${help}`],
  });
  assert.deepEqual(await sim(["--seeds", "99999999999999999999"]), {
    code: 2,
    lines: [],
    errors: [
      `error: --seeds: 99999999999999999999 is above the maximum ${MAX_SEED} (2^53-1).${help}`,
    ],
  });
  assert.deepEqual(await sim(["--seed", String(MAX_SEED), "--seeds", "2"]), {
    code: 2,
    lines: [],
    errors: [
      `error: 2 seeds from ${MAX_SEED} go past the largest seed ${MAX_SEED} (2^53-1).${help}`,
    ],
  });
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(file, `name: x\nfaults: {watchDorp: 0.2}\n${STEP}`);
  const bad = await sim([file]);
  assert.deepEqual([bad.code, bad.lines, bad.errors.length], [2, [], 1]);
  assert.match(bad.errors[0], /^error: .*: faults\.watchDorp: unknown fault kind/);
});

Deno.test("cli sim: SIM_SEEDS that is not a count is a usage error", async () => {
  const before = Deno.env.get("SIM_SEEDS");
  Deno.env.set("SIM_SEEDS", "lots");
  try {
    assert.deepEqual(await sim(["--faults", "none"]), {
      code: 2,
      lines: [],
      errors: [`error: SIM_SEEDS needs a non-negative integer, got lots. See 'mod.ts sim --help'.`],
    });
  } finally {
    if (before === undefined) Deno.env.delete("SIM_SEEDS");
    else Deno.env.set("SIM_SEEDS", before);
  }
});

Deno.test("strict: an applied object of the project's kinds with a field its schema lacks is refused as kubectl's strict validation refuses it", async () => {
  const rateLimit = (bucket: string) =>
    `      - apiVersion: gateway.platform-project.io/v1alpha1
        kind: RateLimit
        metadata: {name: web, namespace: demo, lables: {a: b}}
        spec:
          selectorLabels: {app: web}
          local: {defaultBucket: {${bucket}}}
`;
  const typo = "maxTokenz: 5, tokensPerFill: 5, fillInterval: 30s";
  const failed = await runScenario(
    parseScenario(`name: typo\nsteps:\n  - at: 1s\n    apply:\n${rateLimit(typo)}`, "f.yaml"),
  );
  assert.ok(!failed.ok);
  assert.match(
    failed.failure ?? "",
    /apply RateLimit demo\/web failed: 400 BadRequest: strict decoding error: unknown field "metadata\.lables"; did you mean labels\?, unknown field "spec\.local\.defaultBucket\.maxTokenz"; did you mean maxTokens\?/,
  );
  // Expected, the refusal is a step like any other (the object is not stored).
  const expected = await runScenario(parseScenario(
    `name: typo\nsteps:\n  - at: 1s\n    apply:\n${
      rateLimit(typo)
    }    expectError: {code: 400, message: maxTokenz}\n  - at: 2s\n    expect: [{kind: RateLimit, namespace: demo, name: web, absent: true}]\n`,
    "f.yaml",
  ));
  assert.ok(expected.ok, expected.failure ?? "");
});

Deno.test("expect: an unknown kind or apiVersion is refused, not passed as absent or count 0", () => {
  assert.match(
    refusal(
      `name: x\n${STEP}    expect: [{kind: RateLimt, namespace: d, name: a, absent: true}]\n`,
    ),
    /^f\.yaml: steps\[0\]\.expect\[0\]\.kind: unknown kind "RateLimt" \(did you mean RateLimit\?\); known: .*EnvoyFilter/,
  );
  assert.match(
    refusal(`name: x\n${STEP}    expect: [{kind: EnvoyFiltr, namespace: d, count: 0}]\n`),
    /^f\.yaml: steps\[0\]\.expect\[0\]\.kind: unknown kind "EnvoyFiltr" \(did you mean EnvoyFilter\?\)/,
  );
  assert.equal(
    refusal(
      `name: x\n${STEP}    expect: [{kind: RateLimit, apiVersion: v1, name: a, absent: true}]\n`,
    ),
    'f.yaml: steps[0].expect[0].apiVersion: "v1" does not serve RateLimit, which is in gateway.platform-project.io',
  );
  // The simulator's kinds in their groups, and a CRD's kind the scenario applies, are taken.
  const crd = [
    "    apply:",
    "      apiVersion: apiextensions.k8s.io/v1",
    "      kind: CustomResourceDefinition",
    "      metadata: {name: widgets.example.com}",
    "      spec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced}",
    "    expect:",
    "      - {kind: Widget, apiVersion: example.com/v1, namespace: d, count: 0}",
    "      - {kind: RateLimit, apiVersion: gateway.platform-project.io/v1alpha1, name: a, absent: true}",
    "      - {kind: Job, namespace: d, count: 0}",
  ].join("\n");
  assert.equal(parseScenario(`name: x\n${STEP}${crd}\n`).steps[0].expect!.length, 3);
});

Deno.test("expect: an empty conditions or noConditions is refused, as it checks nothing", () => {
  for (const key of ["conditions", "noConditions"]) {
    assert.equal(
      refusal(
        `name: x\n${STEP}    expect: [{kind: RateLimit, namespace: d, name: a, ${key}: []}]\n`,
      ),
      `f.yaml: steps[0].expect[0].${key}: an empty list checks nothing: list a condition, or leave the key out`,
    );
  }
});

Deno.test("strict: a misspelt metadata key is refused in every kind applied, not only the project's", async () => {
  for (
    const object of [
      "{apiVersion: v1, kind: Namespace, metadata: {name: demo, lables: {a: b}}}",
      "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default, anotations: {}}}",
      "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default, ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: u, controler: true}]}}",
    ]
  ) {
    const r = await runScenario(
      parseScenario(`name: typo\nsteps:\n  - at: 1s\n    apply: [${object}]\n`, "f.yaml"),
    );
    assert.ok(!r.ok, object);
    assert.match(
      r.failure ?? "",
      /failed: 400 BadRequest: strict decoding error: unknown field "metadata\.(lables"; did you mean labels\?|anotations"; did you mean annotations\?|ownerReferences\[0\]\.controler"; did you mean controller\?)$/m,
    );
  }
});
