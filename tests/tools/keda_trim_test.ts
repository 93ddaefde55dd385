/**
 * tools/keda/trim.ts: the switch of KEDA's buildScaler keeps the kept triggers' cases and its
 * default, a layout it does not know is an error, and on KEDA's own module (needs `go`, skipped
 * without) the trimmed tree keeps exactly the tests' triggers and leaves the cloud SDKs out of all
 * three programs while adding no package the released tree does not have.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { goVersion, runGo } from "../../tools/gobuild.ts";
import { KEDA_GO_DIR, KEDA_MODULE, KEDA_PROGRAMS, kedaVersion } from "../../tools/keda/build.ts";
import {
  KEDA_TRIGGERS,
  SCALERS_DIR,
  trimBuilder,
  trimmedCopy,
  trimmedGoMod,
} from "../../tools/keda/trim.ts";

const SOURCE = `package scaling

func buildScaler(triggerType string) (scalers.Scaler, error) {
	// TRIGGERS-START
	switch triggerType {
	case "activemq":
		return scalers.NewActiveMQScaler(config)
	case "cpu":
		return scalers.NewCPUMemoryScaler(corev1.ResourceCPU, config)
	case "cron":
		return scalers.NewCronScaler(config)
	// TODO: a comment between cases
	case "datadog":
		return scalers.NewDatadogScaler(ctx, config)
	default:
		return nil, fmt.Errorf("no scaler found for type: %s", triggerType)
	}
	// TRIGGERS-END
}
`;

Deno.test("trimBuilder keeps the kept triggers' cases and the default, in KEDA's order", () => {
  const t = trimBuilder(SOURCE, ["cron", "cpu"]);
  assert.deepEqual(t.triggers, ["cpu", "cron"]);
  assert.deepEqual(t.constructors, ["NewCPUMemoryScaler", "NewCronScaler"]);
  assert.doesNotMatch(t.text, /activemq|datadog|Datadog|ActiveMQ/);
  assert.match(t.text, /\tdefault:\n\t\treturn nil, fmt\.Errorf\("no scaler found/);
  assert.match(t.text, /^package scaling\n\nfunc buildScaler/);
  assert.match(t.text, /\t\/\/ TRIGGERS-END\n}\n$/);
  // Nothing but the dropped clauses changes.
  const dropped = SOURCE.split("\n").filter((l) => !t.text.split("\n").includes(l));
  assert.deepEqual(dropped, [
    '\tcase "activemq":',
    "\t\treturn scalers.NewActiveMQScaler(config)",
    '\tcase "datadog":',
    "\t\treturn scalers.NewDatadogScaler(ctx, config)",
  ]);
});

Deno.test("trimBuilder refuses a layout it does not know or a trigger with no case", () => {
  assert.throws(() => trimBuilder(SOURCE.replace("TRIGGERS-START", "X"), ["cron"]), /TRIGGERS-/);
  assert.throws(() => trimBuilder(SOURCE, ["cron", "kafka"]), /no case for kafka/);
  assert.throws(
    () => trimBuilder(SOURCE.replace(/\tdefault:\n.*\n/, ""), ["cron"]),
    /no default case/,
  );
});

const noGo = await goVersion(KEDA_GO_DIR) === null;

/** The modules of every package the three programs import, read with `go list -deps`. */
async function depModules(modfile: string): Promise<Set<string>> {
  const out = await runGo([
    "list",
    `-modfile=${modfile}`,
    "-deps",
    "-f",
    "{{if not .Standard}}{{.ImportPath}} {{.Module.Path}}{{end}}",
    ...Object.values(KEDA_PROGRAMS).map((p) => p.pkg),
  ], KEDA_GO_DIR);
  return new Set(out.split("\n").filter((l) => l !== ""));
}

Deno.test({
  name: "KEDA trimmed: the tests' triggers kept, the cloud SDKs gone, nothing added",
  ignore: noGo,
  async fn() {
    const version = await kedaVersion();
    const info = JSON.parse(
      await runGo(["mod", "download", "-json", `${KEDA_MODULE}@${version}`], KEDA_GO_DIR),
    ) as { Dir: string };
    const tmp = await Deno.makeTempDir({ prefix: "keda-trim-" });
    try {
      const src = join(tmp, "src");
      const report = await trimmedCopy(info.Dir, src);
      assert.deepEqual([...report.triggers].sort(), [...KEDA_TRIGGERS].sort());
      assert.deepEqual(report.keptFiles, [
        "cpu_memory_scaler.go",
        "cron_scaler.go",
        "metrics_api_scaler.go",
      ]);
      assert.ok(report.removedFiles > 50, `${report.removedFiles} files removed`);
      // The borrowed constant is KEDA's own declaration.
      const azureQueue = await Deno.readTextFile(
        join(info.Dir, SCALERS_DIR, "azure_queue_scaler.go"),
      );
      assert.deepEqual(report.borrowed, ['const externalMetricType = "External"']);
      assert.match(azureQueue, /^\s*externalMetricType\s*=\s*"External"$/m);
      // A second call with the same module reuses the copy.
      await Deno.writeTextFile(join(src, "marker"), "");
      await trimmedCopy(info.Dir, src);
      assert.ok((await Deno.stat(join(src, "marker"))).isFile);

      const gomod = await Deno.readTextFile(join(KEDA_GO_DIR, "go.mod"));
      const modfile = join(tmp, "keda.mod");
      await Deno.writeTextFile(modfile, trimmedGoMod(gomod, KEDA_MODULE, src));
      await Deno.copyFile(join(KEDA_GO_DIR, "go.sum"), join(tmp, "keda.sum"));
      const trimmed = await depModules(modfile);
      const released = await depModules(join(KEDA_GO_DIR, "go.mod"));
      const added = [...trimmed].filter((p) => !released.has(p));
      assert.deepEqual(added, [], "the trimmed programs import nothing the released ones do not");
      const modules = (s: Set<string>) => new Set([...s].map((l) => l.split(" ")[1]));
      for (
        const sdk of [
          "github.com/DataDog/datadog-api-client-go",
          "github.com/IBM/sarama",
          "go.mongodb.org/mongo-driver",
          "github.com/microsoft/go-mssqldb",
          "go.temporal.io/api",
        ]
      ) {
        assert.ok(modules(released).has(sdk), `the released KEDA uses ${sdk}`);
        assert.ok(!modules(trimmed).has(sdk), `the trimmed KEDA does not use ${sdk}`);
      }
      assert.ok(
        trimmed.size < released.size * 0.8,
        `${trimmed.size} packages against ${released.size}`,
      );
    } finally {
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
