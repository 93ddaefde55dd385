/**
 * The one flag parser of the CLI's commands (src/cli/flags.ts), the values `mod.ts run` takes
 * (src/cli/run_flags.ts), and the front door's own arguments (src/cli/main.ts).
 */
import assert from "node:assert/strict";
import { parseFlags, UsageError } from "../../src/cli/flags.ts";
import { parseRunFlags } from "../../src/cli/run_flags.ts";
import { type Command, COMMANDS, main } from "../../src/cli/main.ts";
import { VERSION } from "../../src/cli/version.ts";

const SPEC = {
  file: { type: "string", short: "f" },
  for: { type: "string" },
  header: { type: "string", multiple: true },
  json: { type: "boolean" },
} as const;

Deno.test("a value is the next argument whatever it starts with; = works too; the last one wins", () => {
  assert.deepEqual(
    parseFlags(["-f", "-", "--for", "-1s", "--header=a=b", "--header", "c=d"], SPEC),
    {
      help: false,
      values: { file: "-", for: "-1s", header: ["a=b", "c=d"] },
      positionals: [],
    },
  );
  assert.deepEqual(parseFlags(["--for", "1s", "--for=2s"], SPEC), {
    help: false,
    values: { for: "2s" },
    positionals: [],
  });
});

Deno.test("-h or --help anywhere before -- asks for help, even beside an error", () => {
  assert.deepEqual(parseFlags(["--bogus", "-h"], SPEC), { help: true });
  assert.deepEqual(parseFlags(["--", "--help"], SPEC, true), {
    help: false,
    values: {},
    positionals: ["--help"],
  });
});

Deno.test("usage errors: unknown flag (with the one meant), missing value, value on a boolean, stray argument", () => {
  const cases: [string[], string][] = [
    [["--jsn"], "unknown flag --jsn; did you mean --json?"],
    [["-x"], "unknown flag -x"],
    [["--for"], "--for needs a value"],
    [["--json=yes"], "--json takes no value"],
    [["a.yaml"], `unexpected argument "a.yaml": this command takes none`],
  ];
  for (const [args, message] of cases) {
    assert.throws(
      () => parseFlags(args, SPEC),
      (e) => e instanceof UsageError && e.message === message,
    );
  }
  assert.deepEqual(parseFlags(["a.yaml", "--json"], SPEC, true), {
    help: false,
    values: { json: true },
    positionals: ["a.yaml"],
  });
});

/**
 * `mod.ts run`'s flags refuse what fuzzing found accepted (and only failing, or never failing, once
 * the operator connects): each refusal is one line naming the flag and what it takes.
 */
const noEnv = () => undefined;

/** What parseRunFlags says about `args`: its error message, or "accepted". */
function runFlagsSay(args: string[]): string {
  const parsed = parseRunFlags(args, noEnv);
  return parsed.kind === "error" ? parsed.message : parsed.kind === "help" ? "help" : "accepted";
}

/** The cases whose message does not match, each with what was said: [] when all match. */
function mismatches(cases: readonly (readonly [string[], RegExp])[]): string[] {
  return cases.flatMap(([args, message]) => {
    const said = runFlagsSay(args);
    return message.test(said) ? [] : [`${args.join(" ")}: ${said}`];
  });
}

Deno.test("run: --lease-namespace is a namespace name, --lease-name and a Secret's name a DNS subdomain", () => {
  const ns = /use a namespace name \(a DNS label\)$/;
  const lease =
    /use a Lease name \(a DNS subdomain: lower case letters, digits, '-' and '\.', at most 253 characters, starting and ending with a letter or digit\)$/;
  assert.deepEqual(
    mismatches([
      [["--lease-namespace="], new RegExp(`^invalid --lease-namespace "": ${ns.source}`)],
      [
        ["--lease-namespace=Bad_NS!"],
        new RegExp(`^invalid --lease-namespace "Bad_NS!": ${ns.source}`),
      ],
      [["--lease-namespace=a".padEnd(82, "a")], /^invalid --lease-namespace "a{64}"/],
      // A control character is shown escaped: the error stays one line.
      [["--lease-namespace=a\nb"], /^invalid --lease-namespace "a\\nb": [^\n]*$/],
      [["--lease-name=a\rb"], /^invalid --lease-name "a\\rb": [^\r]*$/],
      [["--lease-name="], new RegExp(`^invalid --lease-name "": ${lease.source}`)],
      [["--lease-name=UPPER/x"], new RegExp(`^invalid --lease-name "UPPER/x": ${lease.source}`)],
      [["--lease-name=a..b"], /^invalid --lease-name "a\.\.b"/],
      [["--lease-name=a.-b"], /^invalid --lease-name "a\.-b"/],
      [["--lease-name=-a"], /^invalid --lease-name "-a"/],
      [[`--lease-name=${"a".repeat(254)}`], /^invalid --lease-name "a{254}"/],
      // What Kubernetes accepts stays accepted.
      [["--lease-namespace=kube-system", "--lease-name=platform-operator.v2-a"], /^accepted$/],
      [[`--lease-name=${"a".repeat(63)}.${"b".repeat(189)}`], /^accepted$/],
      // A Secret's name is a DNS subdomain by the same rule.
      [["--global-redis-secret=platform-ratelimit/a..b"], /^invalid --global-redis-secret/],
      [["--global-redis-secret=platform-ratelimit/redis.v2"], /^accepted$/],
    ]),
    [],
  );
});

Deno.test("run: --identity (the Lease holder identity) is not empty; --istiod-token-file is a path", () => {
  assert.deepEqual(
    mismatches([
      [
        ["--identity="],
        /^invalid --identity "": use this replica's name in the Lease, not empty \(default: POD_NAME, else the hostname\)$/,
      ],
      [
        ["--istiod-token-file="],
        /^invalid --istiod-token-file "": use the path of istiod's token file \(default \/etc\/platform-operator\/istiod\/token\)$/,
      ],
      // holderIdentity is a free string in the Lease API: anything else not empty is taken.
      [["--identity=Pod 1/ä", "--istiod-token-file=token"], /^accepted$/],
    ]),
    [],
  );
});

Deno.test("run: --context= is refused, not taken as no --context", () => {
  assert.deepEqual(
    mismatches([
      [
        ["--context="],
        /^invalid --context "": use a context of the kubeconfig, not empty \(default: its current-context\)$/,
      ],
      [["--context=kind-dev"], /^accepted$/],
    ]),
    [],
  );
});

Deno.test("run: every image flag takes an image reference, [registry/]name[:tag][@digest]", () => {
  const flags = [
    "global-engine-image",
    "serverless-image",
    "keda-operator-image",
    "keda-metrics-server-image",
    "keda-webhook-image",
  ];
  const digest = `sha256:${"0123456789abcdef".repeat(4)}`;
  const cases: [string[], RegExp][] = [];
  for (const f of flags) {
    for (
      const bad of [
        "",
        "not an image",
        " ghcr.io/a/b:1",
        "ghcr.io/a/b:1\n",
        "ghcr.io/a/b:1\t",
        "ghcr.io/A/b:1",
        "ghcr.io/a/b:",
        "ghcr.io/a/b:-1",
        "ghcr.io/a/b@sha256:abc",
        "ghcr.io/a//b",
        "ghcr.io/a/b/",
        `ghcr.io/a/b:${"t".repeat(129)}`,
        `ghcr.io/${"a".repeat(256)}`,
      ]
    ) {
      cases.push([
        [`--${f}=${bad}`],
        new RegExp(
          `^invalid --${f} ${
            JSON.stringify(bad).replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")
          }: use an image reference, \\[registry/\\]name\\[:tag\\]\\[@digest\\] \\(e\\.g\\. [^ ]+\\)$`,
        ),
      ]);
    }
    for (
      const good of [
        "busybox",
        "reg/keda:flag",
        "localhost:5000/platform-project/ratelimit-engine:1.4.1-0.2026",
        `ghcr.io/kedacore/keda@${digest}`,
        `ghcr.io/kedacore/keda:2.20.2@${digest}`,
        "[fd00::1]:5000/a/b_c__d---e.f:Tag_1.x-y",
        "Registry.Example/a/b",
      ]
    ) cases.push([[`--${f}=${good}`], /^accepted$/]);
  }
  assert.deepEqual(mismatches(cases), []);
});

Deno.test("run: the engine's requests and limits are not negative", () => {
  assert.deepEqual(
    mismatches([
      [
        ["--global-engine-requests=cpu=-1,memory=-5Gi"],
        /^invalid --global-engine-requests "cpu=-1,memory=-5Gi": cpu=-1 is negative; use quantities of 0 or more$/,
      ],
      [
        ["--global-engine-limits=memory=-1"],
        /^invalid --global-engine-limits "memory=-1": memory=-1 is negative; use quantities of 0 or more$/,
      ],
      [["--global-engine-requests=cpu=0,memory=-0", "--global-engine-limits=cpu=+1"], /^accepted$/],
    ]),
    [],
  );
});

Deno.test("run: --global-engine-xds-url is host:port, the port 1 to 65535, an IPv6 host in brackets", () => {
  const use =
    / use host:port with a port from 1 to 65535 \(an IPv6 host in brackets, e\.g\. \[fd00::1\]:18001\)$/;
  const cases: [string[], RegExp][] = [
    "::::",
    "host",
    "host:",
    ":18001",
    "host:0",
    "host:65536",
    "host:99999",
    "fd00::1:18001",
    "[fd00::1]",
    "[not-v6]:18001",
    "[fd00:::1:::]:18001",
    "a b:18001",
    "http://host:18001",
    "-host:18001",
    "host-.svc:18001",
    "a..b:18001",
    "300.1.1.1:18001",
  ].map((bad) => [
    [`--global-engine-xds-url=${bad}`],
    new RegExp(
      `^invalid --global-engine-xds-url ${
        JSON.stringify(bad).replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")
      }:${use.source}`,
    ),
  ]);
  for (
    const good of [
      "",
      "platform-operator-xds.platform-system.svc:18001",
      "10.0.0.7:1",
      "[fd00::1]:65535",
      "[::ffff:10.0.0.1]:18001",
      "Operator.Example:18001",
    ]
  ) cases.push([[`--global-engine-xds-url=${good}`], /^accepted$/]);
  assert.deepEqual(mismatches(cases), []);
});

Deno.test("run: --metrics-addr and --probe-addr take a port from 0 to 65535, and not the same one", () => {
  const addr = (f: string, v: string) =>
    new RegExp(
      `^invalid --${f} ${
        JSON.stringify(v).replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")
      }: use \\[host\\]:port with a port from 0 to 65535 \\(e\\.g\\. :8080\\), or 0 to turn it off$`,
    );
  const shared = (m: string, p: string, port: number) =>
    new RegExp(
      `^--metrics-addr "${m.replace(/[[\].]/g, "\\$&")}" and --probe-addr "${
        p.replace(/[[\].]/g, "\\$&")
      }" both listen on port ${port}: give them different ports, or 0 to turn one off$`,
    );
  assert.deepEqual(
    mismatches([
      [["--metrics-addr=:99999"], addr("metrics-addr", ":99999")],
      [["--metrics-addr=[::1]:99999"], addr("metrics-addr", "[::1]:99999")],
      [["--probe-addr=:65536"], addr("probe-addr", ":65536")],
      [["--probe-addr=127.0.0.1:070000"], addr("probe-addr", "127.0.0.1:070000")],
      [
        ["--metrics-addr=127.0.0.1:18931", "--probe-addr=127.0.0.1:18931"],
        shared("127.0.0.1:18931", "127.0.0.1:18931", 18931),
      ],
      [
        ["--metrics-addr=:9000", "--probe-addr=127.0.0.1:9000"],
        shared(":9000", "127.0.0.1:9000", 9000),
      ],
      [
        ["--metrics-addr=[::1]:9000", "--probe-addr=0.0.0.0:9000"],
        shared("[::1]:9000", "0.0.0.0:9000", 9000),
      ],
      [
        ["--metrics-addr=[::]:9000", "--probe-addr=[::1]:9000"],
        shared("[::]:9000", "[::1]:9000", 9000),
      ],
      [["--probe-addr=:8080"], shared(":8080", ":8080", 8080)],
      // Ports 0 (any free one), different hosts, and "0" (off) are not shared.
      [["--metrics-addr=:65535", "--probe-addr=[::1]:0"], /^accepted$/],
      [["--metrics-addr=127.0.0.1:0", "--probe-addr=127.0.0.1:0"], /^accepted$/],
      [["--metrics-addr=127.0.0.1:9000", "--probe-addr=127.0.0.2:9000"], /^accepted$/],
      [["--metrics-addr=0", "--probe-addr=0"], /^accepted$/],
    ]),
    [],
  );
});

Deno.test("mod.ts --version and help <command> refuse extra arguments (exit 2, one line); did you mean stays", async () => {
  // The front door's commands, by name, each recording the arguments it is given.
  const given: string[][] = [];
  const commands: Command[] = COMMANDS.map((c) => ({
    ...c,
    load: () =>
      Promise.resolve({ main: (args: string[]) => (given.push(args), Promise.resolve(0)) }),
  }));
  const said: string[] = [];
  const output = { out: (l: string) => said.push(`out: ${l}`), err: (l: string) => said.push(l) };
  const run = async (args: string[]) => {
    said.length = 0;
    given.length = 0;
    const code = await main(args, commands, output);
    return [code, ...said, ...given.map((a) => `command got ${JSON.stringify(a)}`)];
  };
  const problems: string[] = [];
  const expect = async (args: string[], want: (string | number)[]) => {
    const got = await run(args);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      problems.push(`${args.join(" ")}: ${JSON.stringify(got)}`);
    }
  };
  await expect(["--version", "--bogus"], [
    2,
    `error: unexpected argument "--bogus": --version takes none. See 'mod.ts --help'.`,
  ]);
  await expect(["--version", "run"], [
    2,
    `error: unexpected argument "run": --version takes none. See 'mod.ts --help'.`,
  ]);
  await expect(["help", "sim", "bogus"], [
    2,
    `error: unexpected argument "bogus": help takes one command. See 'mod.ts --help'.`,
  ]);
  await expect(["help", "crds", "--check"], [
    2,
    `error: unexpected argument "--check": help takes one command. See 'mod.ts --help'.`,
  ]);
  // What was right stays: the command meant, help words around the command, --version alone.
  await expect(["help", "simm", "bogus"], [
    2,
    `error: no help on "simm": not a command; did you mean sim? See 'mod.ts --help'.`,
  ]);
  await expect(["--versoin"], [
    2,
    `error: unknown flag "--versoin"; did you mean --version? See 'mod.ts --help'.`,
  ]);
  await expect(["help", "crds", "--help"], [0, `command got ["--help"]`]);
  await expect(["-h", "sim", "-h"], [0, `command got ["--help"]`]);
  await expect(["--version"], [0, `out: platform-operator ${VERSION}`]);
  assert.deepEqual(problems, []);
});
