/** The one flag parser of the CLI's commands (src/cli/flags.ts). */
import assert from "node:assert/strict";
import { parseFlags, UsageError } from "../../src/cli/flags.ts";

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
