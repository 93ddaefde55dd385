/**
 * `./deno task image` builds the Dockerfile's deno-runtime target here (no registry), and the
 * image runs as the Pod runs it: uid 65532, read-only root filesystem, no capabilities. It has no
 * shell and no package manager, ships only the operator's npm packages, holds the Debian packages
 * its record names, and the operator in it gets ready against an API server on loopback, stops
 * on SIGTERM with exit 0 and writes nothing. Skipped, loudly, only where podman is missing.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildImage, contextHash, DEFAULT_TAG, type ImageRecord } from "../../tools/image/image.ts";
import { type Lockfile, packageName, ROOT } from "../../tools/image/lock.ts";
import { podman } from "../../tools/image/podman.ts";
import { freePort } from "../../tools/processes.ts";
import { startServer } from "../kube/fake_server.ts";
import { kubeconfigFor } from "../kube/helpers.ts";
import { makePki } from "../kube/pki.ts";
import { SimApi } from "../kube/sim_api.ts";
import { operatorFiles } from "./dockerfile.ts";
import { containerLaunch, RUN_AS_POD } from "../../tools/operator/container.ts";

const hasPodman = await new Deno.Command("podman", { args: ["--version"] }).output()
  .then((o) => o.success, () => false);
if (!hasPodman) {
  console.error(
    "\n!!! SKIPPED tests/deploy/image_test.ts: podman is not installed (apt-get install podman);\n" +
      "!!! the image is neither built nor run\n",
  );
}
const ignore = !hasPodman;

/** `podman run` as the Pod runs the image: uid 65532, no capabilities, a read-only root, no network. */
const RUN_READ_ONLY = [
  "run",
  "--rm",
  "--read-only",
  "--read-only-tmpfs=false",
  ...RUN_AS_POD,
  "--network=none",
];

let record: ImageRecord | undefined;
/** The last build's record (built by the first test). */
function built(): ImageRecord {
  assert.ok(record, "the build test ran first and passed");
  return record;
}

Deno.test({
  name:
    "./deno task image's build: progress lines, the deno-runtime target, a saved archive, a record",
  ignore,
  async fn() {
    const lines: string[] = [];
    record = await buildImage((l) => lines.push(l));
    assert.equal(record.tag, DEFAULT_TAG);
    assert.equal(record.target, "deno-runtime");
    assert.ok(lines.includes("podman build --target deno-runtime"), lines.join("\n"));
    assert.ok(lines.some((l) => /^podman build --target deno-runtime: done in /.test(l)));
    assert.ok((await Deno.stat(record.archive)).size > 50e6, "the saved archive");
    assert.deepEqual(record.packages.map((p) => p.name), [
      "libc6",
      "libgcc-s1",
      "ca-certificates",
      "tzdata",
    ]);
    assert.equal(record.deno.version, "2.9.6");
  },
});

Deno.test({
  name:
    "a build that may reuse gives the last one back, unbuilt, when its context is unchanged; ./deno task image builds again",
  ignore,
  async fn() {
    const lines: string[] = [];
    const again = await buildImage((l) => lines.push(l), { reuse: true });
    assert.equal(again.id, built().id);
    assert.equal(again.inputs, built().inputs);
    assert.ok(lines.some((l) => / up to date \(/.test(l)), lines.join("\n"));
    assert.ok(!lines.some((l) => l.startsWith("podman build")), "nothing built");
  },
});

Deno.test("the image's context hash follows the files the Dockerfile copies and the settings, nothing else", async () => {
  const dir = await Deno.makeTempDir({ prefix: "image-context-" });
  try {
    const put = async (p: string, text: string) => {
      await Deno.mkdir(join(dir, p, ".."), { recursive: true });
      await Deno.writeTextFile(join(dir, p), text);
    };
    for (const p of ["Dockerfile", "deno.json", "deno.lock"]) await put(p, p);
    // The repository's allowlist, as the build reads it.
    await put(
      ".dockerignore",
      "*\n!deno.json\n!deno.lock\n!src/\n!data/upstream/\n!deploy/operator/\n",
    );
    await put("src/cli/main.ts", "a");
    await put("data/upstream/keda/crds.json", "[]");
    await put("deploy/operator/deno.json", "{}");
    await put("tests/x_test.ts", "t");
    const hash = () => contextHash(["tag"], dir);
    const first = await hash();
    assert.equal(await hash(), first, "stable");
    await put("tests/x_test.ts", "changed");
    await put("README.md", "new");
    assert.equal(await hash(), first, "files outside the context do not count");
    assert.notEqual(await contextHash(["other tag"], dir), first, "settings count");
    for (
      const p of [
        "src/cli/main.ts",
        "data/upstream/keda/crds.json",
        "deploy/operator/deno.json",
        "Dockerfile",
      ]
    ) {
      const was = await Deno.readTextFile(join(dir, p));
      await put(p, was + " ");
      assert.notEqual(await hash(), first, p);
      await put(p, was);
    }
    await put("src/new.ts", "");
    assert.notEqual(await hash(), first, "a new file in the context");
    // A directory the allowlist lets through later counts from then on.
    await put("static/x.txt", "x");
    await put(
      ".dockerignore",
      (await Deno.readTextFile(join(dir, ".dockerignore"))) + "!static/\n",
    );
    const allowed = await hash();
    await put("static/x.txt", "y");
    assert.notEqual(await hash(), allowed, "a file of a newly allowed directory");
    // A pattern the hash cannot follow is an error.
    await put(".dockerignore", "*\n!src/**/*.ts\n");
    await assert.rejects(hash(), /not a "!path" line/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "docs/operations.md shows the versions and the size of the image the build made",
  ignore,
  async fn() {
    const page = await Deno.readTextFile(join(ROOT, "docs/operations.md"));
    const row = (what: string) =>
      new RegExp(`^\\| ${what.replace(/[.+~]/g, "\\$&")} +\\| ([^ |]+)`, "m").exec(page)?.[1];
    for (const p of built().packages) assert.equal(row(p.name), p.version, p.name);
    assert.equal(row("deno"), built().deno.version);
    assert.equal(row("npm packages \\(deploy/operator/\\)"), String(new Set(built().npm).size));
    const mb = Number(/^It is ([\d.]+) MB/m.exec(page)?.[1]);
    assert.ok(
      Math.abs(mb - built().size / 1e6) < 2,
      `the page says ${mb} MB, the build ${built().size / 1e6}`,
    );
  },
});

/** The image's files (`podman export` of a container never started), paths without a leading `/`. */
async function imageFiles(tag: string): Promise<{ paths: string[]; read(p: string): string }> {
  const name = `image-test-files-${Date.now()}`;
  const dir = await Deno.makeTempDir({ prefix: "image-files-" });
  try {
    await podman(["create", "--name", name, tag]);
    await podman(["export", "--output", join(dir, "fs.tar"), name]);
    const tar = (args: string[]) =>
      new TextDecoder().decode(new Deno.Command("tar", { args, cwd: dir }).outputSync().stdout);
    const paths = tar(["-tf", "fs.tar"]).split("\n").filter((p) => p).map((p) =>
      p.replace(/^\.?\//, "").replace(/\/$/, "")
    );
    const texts = new Map<string, string>();
    for (const p of paths.filter((p) => p.startsWith("var/lib/dpkg/status.d/"))) {
      texts.set(p, tar(["-xOf", "fs.tar", p]));
    }
    return { paths, read: (p) => texts.get(p) ?? "" };
  } finally {
    await podman(["rm", "-f", name], { check: false });
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name:
    "the image: no shell, no package manager, only the operator's npm packages, the recorded Debian packages",
  ignore,
  async fn() {
    const { paths, read } = await imageFiles(built().tag);
    assert.ok(paths.includes("usr/bin/deno") && paths.includes("app/src/cli/operator_main.ts"));
    assert.ok(paths.includes("app/data/upstream/keda/crds.json"), "the CRD data a preload imports");
    const base = (p: string) => p.slice(p.lastIndexOf("/") + 1);
    const shells = ["sh", "bash", "dash", "ash", "zsh", "busybox"];
    assert.deepEqual(paths.filter((p) => shells.includes(base(p))), [], "no shell");
    const managers = ["dpkg", "apt", "apt-get", "rpm", "apk", "update-ca-certificates"];
    const programs = paths.filter((p) => /^(usr\/)?s?bin\/[^/]+$/.test(p));
    assert.deepEqual(programs.filter((p) => managers.includes(base(p))), [], "no package manager");
    assert.deepEqual(programs, ["usr/bin/deno"], "one program: deno");
    const npm = "deno-dir/npm/registry.npmjs.org/";
    const packages = new Set(
      paths.filter((p) => p.startsWith(npm)).map((p) => p.slice(npm.length).split("/"))
        .map((s) => s[0].startsWith("@") ? `${s[0]}/${s[1] ?? ""}` : s[0])
        .filter((n) => !n.endsWith("/")),
    );
    const lock = JSON.parse(
      await Deno.readTextFile(join(ROOT, "deploy/operator/deno.lock")),
    ) as Lockfile;
    assert.deepEqual(
      [...packages].sort(),
      [...new Set(Object.keys(lock.npm).map(packageName))].sort(),
    );
    assert.ok(!packages.has("fast-check"));
    // The record names what the build put in: the control fields each package left in the image.
    for (const p of built().packages) {
      const control = read(`var/lib/dpkg/status.d/${p.name}`);
      assert.match(control, new RegExp(`^Package: ${p.name}$`, "m"));
      assert.match(control, new RegExp(`^Version: ${p.version.replace(/[.+~]/g, "\\$&")}$`, "m"));
    }
    assert.ok(paths.includes("etc/ssl/certs/ca-certificates.crt"));
    assert.ok(paths.includes("usr/share/zoneinfo/Etc/UTC"), "tzdata's zone files, as distroless");
    assert.ok(paths.includes("tmp"));
    // Of the repository, only what the operator imports.
    const graph = (await operatorFiles()).filter((f) => /^(src|data)\//.test(f));
    const carried = paths.filter((p) => /^app\/(src|data)\/.+\.[a-z]+$/.test(p)).map((p) =>
      p.slice("app/".length)
    );
    assert.deepEqual(carried.sort(), graph.sort());
  },
});

Deno.test({
  name:
    "the image runs as 65532 by default; --help exits 0 with the root filesystem read-only and nothing writable",
  ignore,
  async fn() {
    const uid = await podman([
      "run",
      "--rm",
      "--network=none",
      "--entrypoint=/usr/bin/deno",
      built().tag,
      "eval",
      "console.log(Deno.uid(), Deno.gid())",
    ]);
    assert.equal(uid.stdout.trim(), "65532 65532");
    const help = await podman([...RUN_READ_ONLY, built().tag, "--help"], { check: false });
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: mod\.ts run/);
    assert.equal(help.stderr, "", "Deno warns about nothing (no cache write, no download)");
  },
});

Deno.test({
  name:
    "the image's deno reads its module caches from disk on the read-only root, not again into memory",
  ignore,
  async fn() {
    const { paths } = await imageFiles(built().tag);
    const databases = paths.filter((p) => /^deno-dir\/[a-z0-9_]+_v\d+$/.test(p));
    assert.ok(databases.includes("deno-dir/dep_analysis_cache_v2"), paths.join("\n"));
    for (const db of databases) {
      assert.ok(paths.includes(`${db}-wal`) && paths.includes(`${db}-shm`), `${db} sealed`);
    }
    // The entrypoint's deno flags, with Deno's debug log: which caches it opens, and how.
    const run = await podman([
      ...RUN_READ_ONLY,
      "--entrypoint=/usr/bin/deno",
      built().tag,
      "run",
      "-L",
      "debug",
      "--cached-only",
      "--frozen",
      "--no-code-cache",
      "--config=/app/deploy/operator/deno.json",
      "-A",
      "/app/src/cli/operator_main.ts",
      "--help",
    ], { check: false });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /Opening cache \/deno-dir\/dep_analysis_cache_v2/);
    assert.doesNotMatch(run.stderr, /Folder readonly|in-memory|Could not initialize cache/);
  },
});

/**
 * Runs the image's operator against `server` (HTTPS, its certificate from `caCert`) until /readyz
 * is 200, then SIGTERM; its exit code.
 */
async function runUntilReady(
  name: string,
  server: string,
  caCert: string,
  extra: string[],
): Promise<number> {
  // The cluster's CA: trusting it alone needs the image's permissions on Deno's root store variables.
  const kubeconfig = await kubeconfigFor(server, { "certificate-authority-data": btoa(caCert) });
  const dir = kubeconfig.slice(0, kubeconfig.lastIndexOf("/"));
  // Readable by the container's user 65532.
  await Deno.chmod(dir, 0o755);
  await Deno.chmod(kubeconfig, 0o644);
  const probes = `127.0.0.1:${freePort()}`;
  const child = new Deno.Command("podman", {
    args: [
      "--cgroup-manager=cgroupfs",
      "--runtime=runc",
      "run",
      `--name=${name}`,
      ...extra,
      ...RUN_AS_POD,
      // Host network for loopback only: the API server and the probes are on 127.0.0.1.
      "--network=host",
      `--volume=${dir}:/etc/platform-operator:ro`,
      built().tag,
      "--kubeconfig=/etc/platform-operator/kubeconfig",
      `--probe-addr=${probes}`,
      "--metrics-addr=0",
      "--controllers=ratelimit",
      "--leader-elect=false",
    ],
    env: { CONTAINERS_CONF: join(ROOT, ".cache/image/containers.conf") },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const logs = new Response(child.stderr).text();
  try {
    const deadline = Date.now() + 60_000;
    let ready = false;
    while (!ready && Date.now() < deadline) {
      ready = await fetch(`http://${probes}/readyz`, { signal: AbortSignal.timeout(1000) })
        .then(async (r) => (await r.body?.cancel(), r.status === 200), () => false);
      if (!ready) await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(ready, `not ready at ${probes}/readyz:\n${await Promise.race([logs, "…"])}`);
    await podman(["kill", "--signal=TERM", name]);
    const code = (await child.status).code;
    const lines = (await logs).split("\n").filter((l) => l);
    assert.deepEqual(lines.filter((l) => !l.startsWith("{")), [], "only the operator's JSON logs");
    assert.ok(lines.some((l) => JSON.parse(l).msg === "stopped"), lines.join("\n"));
    return code;
  } finally {
    await podman(["kill", name], { check: false });
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the bench's image subject runs the image as the Pod does, its kubeconfig mounted read-only", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/kc`, "{}");
    const launch = await containerLaunch("img:tag", "op-1", `${dir}/kc`, [
      `--kubeconfig=${dir}/kc`,
      "--identity=op-1",
    ]);
    const at = launch.args.indexOf("img:tag");
    assert.deepEqual(launch.args.slice(at + 1), [
      "--kubeconfig=/etc/platform-operator/kubeconfig",
      "--identity=op-1",
    ]);
    const before = launch.args.slice(0, at);
    for (const f of [...RUN_AS_POD, "--read-only", "--network=host", "--rm", "--name=op-1"]) {
      assert.ok(before.includes(f), f);
    }
    const volume = before.find((a) => a.startsWith("--volume="))!;
    assert.match(volume, /:\/etc\/platform-operator:ro$/);
    const copy = volume.slice("--volume=".length, volume.indexOf(":"));
    assert.equal(await Deno.readTextFile(`${copy}/kubeconfig`), "{}");
    assert.equal((await Deno.stat(`${copy}/kubeconfig`)).mode! & 0o777, 0o644);
    await launch.cleanup();
    await assert.rejects(Deno.stat(copy));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "the operator in the image gets ready against an API server on loopback, stops on SIGTERM with exit 0, writes nothing",
  ignore,
  async fn() {
    const api = new SimApi();
    const pki = await makePki();
    const server = await startServer(api.handle, { cert: pki.serverCert, key: pki.serverKey });
    const names = [`image-test-ro-${Date.now()}`, `image-test-rw-${Date.now()}`];
    try {
      const readOnly = ["--rm", "--read-only", "--read-only-tmpfs=false"];
      assert.equal(await runUntilReady(names[0], server.url, pki.caCert, readOnly), 0);
      // With a writable root it must still write nothing: only the mount points podman made.
      assert.equal(await runUntilReady(names[1], server.url, pki.caCert, []), 0);
      const diff = (await podman(["diff", names[1]])).stdout.split("\n").filter((l) => l);
      const podmans =
        /^[AC] \/(etc|etc\/(hosts|hostname|resolv\.conf|platform-operator)|run|run\/\.containerenv)$/;
      assert.deepEqual(diff.filter((l) => !podmans.test(l)), []);
    } finally {
      for (const n of names) await podman(["rm", "-f", n], { check: false });
      api.close();
      await server.close();
    }
  },
});

Deno.test("./deno task image with a tool missing names it and how to install it, and builds nothing", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--frozen", "tools/image/image.ts"],
    cwd: ROOT,
    env: { PATH: "/nonexistent" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 1, err);
  assert.match(
    err,
    /^error: missing podman, runc, apt-get, dpkg-deb, tar: the image build needs$/m,
  );
  assert.match(err, /^ {2}podman \(not found on PATH\): .*; install: apt-get install podman$/m);
  assert.doesNotMatch(new TextDecoder().decode(out.stdout), /podman build/);
});
