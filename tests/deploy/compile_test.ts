/**
 * `deno task compile` cannot finish here (no denort download), so this checks what can be checked:
 * the permissions baked into the binary are exactly what the operator reads, the operator really
 * starts, checks the cluster and stops on SIGTERM under those permissions (run with `deno run
 * --no-prompt`, as the binary would be), and the Dockerfile builds both forms from one build stage
 * with those permissions. tests/deploy/image_test.ts builds and runs the image.
 */
import assert from "node:assert/strict";
import { flagEnvNames } from "../../src/cli/run_flags.ts";
import { SERVICE_ACCOUNT_DIR } from "../../src/kube/config.ts";
import { ROOT_STORE_VARIABLES } from "../../src/kube/trust.ts";
import { json, status } from "../kube/fake_server.ts";
import { startServer } from "../kube/fake_server.ts";
import { kubeconfigFor } from "../kube/helpers.ts";
import { makePki } from "../kube/pki.ts";
import { dirname } from "node:path";
import { OPERATOR_DENO_FLAGS, OPERATOR_ENV } from "../../tools/operator/process.ts";
import { dockerfileStages } from "./dockerfile.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
  tasks: Record<string, string>;
};
const compile = config.tasks.compile.split(" && ").find((c) => c.startsWith("deno compile"))!.split(
  /\s+/,
);

/** The value of `--name=value` or `--name value`. */
function flagValue(name: string): string | undefined {
  const i = compile.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return undefined;
  return compile[i].includes("=") ? compile[i].slice(compile[i].indexOf("=") + 1) : compile[i + 1];
}

/** The test's environment without anything the operator reads, so only the flags configure it. */
function cleanEnv(): Record<string, string> {
  const read = new Set([...flagEnvNames(), "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"]);
  return Object.fromEntries(Object.entries(Deno.env.toObject()).filter(([k]) => !read.has(k)));
}

/** The permission flags of the compile task. */
const permissions = compile.filter((a) => /^--(allow|deny|ignore)-/.test(a) || a === "-A");

Deno.test("compile: pinned target, frozen lockfile, the operator entry, output dist/platform-operator", () => {
  assert.ok(compile.includes("--frozen"));
  assert.equal(flagValue("--target"), "x86_64-unknown-linux-gnu");
  assert.equal(compile[compile.indexOf("-o") + 1], "dist/platform-operator");
  assert.equal(compile.at(-1), "src/cli/operator_main.ts");
});

Deno.test("compile: only the permissions the operator needs", () => {
  assert.ok(
    !permissions.some((p) =>
      ["-A", "--allow-all", "--allow-run", "--allow-write", "--allow-ffi"].includes(p.split("=")[0])
    ),
  );
  assert.equal(flagValue("--allow-sys"), "hostname");
  assert.deepEqual(flagValue("--allow-read")?.split(","), [
    SERVICE_ACCOUNT_DIR,
    "/etc/platform-operator",
  ]);
  const env = flagValue("--allow-env")!.split(",").sort();
  const read = [
    ...new Set([
      ...flagEnvNames(),
      "KUBERNETES_SERVICE_HOST",
      "KUBERNETES_SERVICE_PORT",
      "HOME",
      ...ROOT_STORE_VARIABLES,
    ]),
  ].sort();
  assert.deepEqual(env, read, "--allow-env lists every variable the operator reads, and no other");
  // client-node's dependencies enumerate the environment at import: they see nothing else.
  assert.ok(permissions.includes("--ignore-env"));
});

Deno.test("the operator starts, reports a missing CRD, serves probes and stops on SIGTERM with exactly these permissions", async () => {
  // HTTPS with the cluster's CA: trusting it alone sets Deno's root store variables, which these
  // permissions must allow.
  const pki = await makePki();
  const api = await startServer(
    (req) =>
      req.path.endsWith("/ratelimits")
        ? status(404, "NotFound", "the server could not find the requested resource")
        : req.method === "POST"
        ? json({ ...JSON.parse(req.body), status: { allowed: true } }, 201)
        : json({ items: [], metadata: { resourceVersion: "1" } }),
    { cert: pki.serverCert, key: pki.serverKey },
  );
  const kubeconfig = await kubeconfigFor(api.url, {
    "certificate-authority-data": btoa(pki.caCert),
  });
  const dir = dirname(kubeconfig);
  // The binary reads kubeconfigs from /etc/platform-operator; here the test's folder stands in.
  const perms = permissions.map((p) => p.startsWith("--allow-read=") ? `${p},${dir}` : p);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--frozen",
      "--no-prompt",
      ...perms,
      `${ROOT}src/cli/operator_main.ts`,
      "run",
      `--kubeconfig=${kubeconfig}`,
      "--probe-addr=127.0.0.1:0",
      "--metrics-addr=0",
      "--controllers=ratelimit",
      "--leader-elect=false",
    ],
    cwd: ROOT,
    clearEnv: true,
    env: { ...cleanEnv(), NO_COLOR: "1" },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines: Record<string, unknown>[] = [];
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const next = async (want: (l: Record<string, unknown>) => boolean) => {
    while (true) {
      const found = lines.find(want);
      if (found) return found;
      const { value, done } = await reader.read();
      if (done) {
        throw new Error(
          `the operator exited early:\n${lines.map((l) => JSON.stringify(l)).join("\n")}${buffer}`,
        );
      }
      buffer += value;
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      for (const p of parts) lines.push(p.startsWith("{") ? JSON.parse(p) : { msg: p, raw: true });
    }
  };
  try {
    const using = await next((l) => l.msg === "using the cluster");
    assert.equal(
      using.identity,
      Deno.hostname(),
      "the hostname is readable (--allow-sys=hostname)",
    );
    const probes = await next((l) => l.msg === "serving probes");
    const crd = await next((l) => l.level === "error");
    assert.equal(
      crd.msg,
      "CRD ratelimits.gateway.platform-project.io is not installed: run kubectl apply -k deploy/",
    );
    const health = await fetch(`http://${probes.addr}/healthz`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
    child.kill("SIGTERM");
    const exit = await child.status;
    assert.equal(exit.code, 0);
    assert.ok(
      !lines.some((l) => l.raw),
      `only JSON log lines: ${JSON.stringify(lines.filter((l) => l.raw))}`,
    );
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await reader.cancel().catch(() => {});
    await api.close();
  }
});

Deno.test("Dockerfile: base images as build arguments, one build stage for both forms, the binary by default", async () => {
  const stages = await dockerfileStages();
  assert.deepEqual(stages.get(""), [
    "ARG DENO_IMAGE=denoland/deno:2.9.6",
    "ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot",
  ]);
  assert.deepEqual([...stages.keys()], ["", "build", "compile", "deno-runtime", "binary"]);
  assert.deepEqual([...stages.values()].slice(1).map((s) => s[0]), [
    "FROM ${DENO_IMAGE} AS build",
    "FROM build AS compile",
    "FROM ${RUNTIME_IMAGE} AS deno-runtime",
    "FROM ${RUNTIME_IMAGE} AS binary",
  ]);
  const version =
    (await new Deno.Command(Deno.execPath(), { args: ["--version"] }).output()).stdout;
  assert.match(
    new TextDecoder().decode(version),
    /^deno 2\.9\.6 /,
    "the image pins the project's Deno",
  );
  // The operator's own config and lockfile: only what its graph reaches is fetched.
  assert.ok(
    stages.get("build")!.includes(
      'RUN ["deno", "install", "--config", "deploy/operator/deno.json", "--frozen", "--entrypoint", "src/cli/operator_main.ts"]',
    ),
  );
  assert.ok(stages.get("compile")!.some((l) => /^RUN deno task compile\b/.test(l)));
  assert.equal(flagValue("--config"), "deploy/operator/deno.json");
  assert.ok(compile.includes("--exclude-unused-npm"));
  const binary = stages.get("binary")!;
  assert.ok(binary.includes("COPY --from=compile /app/dist/platform-operator /platform-operator"));
  assert.equal(binary.at(-1), 'ENTRYPOINT ["/platform-operator", "run"]');
  // The image's environment is the one `deno task start`, the tests and the benchmarks run with.
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks as Record<
    string,
    string
  >;
  for (const stage of [binary, stages.get("deno-runtime")!]) {
    assert.ok(stage.includes("USER nonroot"));
    for (const [name, value] of Object.entries(OPERATOR_ENV)) {
      assert.ok(stage.includes(`ENV ${name}=${value}`), `ENV ${name}=${value} in ${stage[0]}`);
      const prefix = tasks.start.slice(0, tasks.start.indexOf("deno run")).split(" ");
      assert.ok(prefix.includes(`${name}=${value}`), `deno task start sets ${name}=${value}`);
    }
  }
  // And `deno run` as the compile task builds: the same Deno flags for the start task and the
  // operator the tests and benchmarks run.
  const start = tasks.start.slice(tasks.start.indexOf("deno run") + "deno run".length).split(" ");
  for (const flag of OPERATOR_DENO_FLAGS) {
    assert.ok(compile.includes(flag), `deno task compile builds with ${flag}`);
    assert.ok(start.includes(flag), `deno task start runs with ${flag}`);
  }
  // Everything the build copies passes the .dockerignore allowlist.
  const allowed = (await Deno.readTextFile(`${ROOT}.dockerignore`)).split("\n").filter((l) =>
    l.startsWith("!")
  )
    .map((l) => l.slice(1));
  for (const l of [...stages.values()].flat().filter((l) => /^COPY (?!--from)/.test(l))) {
    for (const src of l.split(/\s+/).slice(1, -1)) {
      assert.ok(allowed.includes(src), `${src} in .dockerignore`);
    }
  }
});

Deno.test("Dockerfile: the deno-runtime form runs the cached graph with exactly the compile task's permissions", async () => {
  const stage = (await dockerfileStages()).get("deno-runtime")!;
  const entry = JSON.parse(stage.at(-1)!.replace(/^ENTRYPOINT /, "")) as string[];
  assert.deepEqual(entry.slice(0, 2), ["/usr/bin/deno", "run"]);
  assert.deepEqual(entry.slice(-2), ["/app/src/cli/operator_main.ts", "run"]);
  const flags = entry.slice(2, -2);
  // Nothing fetched at run time, the lockfile frozen, no code cache written, never a prompt.
  for (const f of ["--cached-only", ...OPERATOR_DENO_FLAGS, "--no-prompt"]) {
    assert.ok(flags.includes(f), f);
  }
  assert.ok(flags.includes("--config=/app/deploy/operator/deno.json"));
  assert.deepEqual(
    flags.filter((f) => /^--(allow|deny|ignore)-/.test(f) || f === "-A"),
    permissions,
  );
  for (const l of ["COPY --from=build /usr/bin/deno /usr/bin/deno", "ENV DENO_DIR=/deno-dir/"]) {
    assert.ok(stage.includes(l), l);
  }
});
