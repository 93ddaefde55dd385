/**
 * Prometheus metrics without a dependency: counters, gauges and histograms with labels, rendered in
 * the text exposition format (version 0.0.4), and the operator's own metric set. The `Cluster`
 * wrapper that counts API calls into it is instrumented_cluster.ts's.
 */

/** Label values of one series. */
export type MetricLabels = Record<string, string>;

/** Content type of `Metrics.render()`. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** `k=v` pairs in key order, comma-separated: built directly (every API call counts one). */
function seriesKey(labels: MetricLabels): string {
  const keys = Object.keys(labels);
  if (keys.length > 1) keys.sort();
  let out = "";
  for (let i = 0; i < keys.length; i++) {
    out += `${i > 0 ? "," : ""}${keys[i]}=${labels[keys[i]]}`;
  }
  return out;
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function labelText(labels: MetricLabels, extra?: [string, string]): string {
  const pairs = Object.keys(labels).sort().map((k) => `${k}="${escapeLabel(labels[k])}"`);
  if (extra) pairs.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return pairs.length ? `{${pairs.join(",")}}` : "";
}

function num(v: number): string {
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return Number.isNaN(v) ? "NaN" : String(v);
}

/** A family as the scrape reads it. */
export interface Rendered {
  readonly name: string;
  render(): string[];
}

/**
 * A metric family: its series by label set, and the text of the exposition format. Each kind
 * says how a series is made and what lines it renders.
 */
abstract class Family<S extends { labels: MetricLabels }> implements Rendered {
  protected readonly series = new Map<string, S>();
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly type: "counter" | "gauge" | "histogram",
  ) {}
  /** The series of `labels`, made by `make` the first time. */
  protected at(labels: MetricLabels, make: (labels: MetricLabels) => S): S {
    const k = seriesKey(labels);
    let s = this.series.get(k);
    if (!s) this.series.set(k, s = make({ ...labels }));
    return s;
  }
  /** The lines of one series. */
  protected abstract lines(s: S): string[];
  /** Text lines of the family. */
  render(): string[] {
    const out = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const k of [...this.series.keys()].sort()) out.push(...this.lines(this.series.get(k)!));
    return out;
  }
}

/** A family of one number per label set. */
abstract class Scalar extends Family<{ labels: MetricLabels; value: number }> {
  /** The current value of a series (0 when never written). */
  get(labels: MetricLabels = {}): number {
    return this.series.get(seriesKey(labels))?.value ?? 0;
  }
  protected lines(s: { labels: MetricLabels; value: number }): string[] {
    return [`${this.name}${labelText(s.labels)} ${num(s.value)}`];
  }
}

/** A monotonically increasing value per label set. */
export class Counter extends Scalar {
  constructor(name: string, help: string) {
    super(name, help, "counter");
  }
  /** Adds `by` (default 1) to the series of `labels`. */
  inc(labels: MetricLabels = {}, by = 1): void {
    this.at(labels, (l) => ({ labels: l, value: 0 })).value += by;
  }
}

/** A value that goes up and down per label set. */
export class Gauge extends Scalar {
  constructor(name: string, help: string) {
    super(name, help, "gauge");
  }
  /** Sets the series of `labels`. */
  set(labels: MetricLabels, value: number): void {
    this.at(labels, (l) => ({ labels: l, value })).value = value;
  }
  /**
   * A setter of the series of `labels`, found once: for a gauge set on every change (a queue's
   * depth, as each of a thousand keys is queued at once).
   */
  setter(labels: MetricLabels): (value: number) => void {
    let series: { value: number } | undefined;
    return (value) => {
      series ??= this.at(labels, (l) => ({ labels: l, value }));
      series.value = value;
    };
  }
}

interface HistogramSeries {
  labels: MetricLabels;
  counts: number[];
  sum: number;
  count: number;
}

/** Observations counted into cumulative buckets per label set. */
export class Histogram extends Family<HistogramSeries> {
  constructor(name: string, help: string, readonly buckets: readonly number[]) {
    super(name, help, "histogram");
  }
  /** Records one observation. */
  observe(labels: MetricLabels, value: number): void {
    const s = this.at(
      labels,
      (l) => ({ labels: l, counts: this.buckets.map(() => 0), sum: 0, count: 0 }),
    );
    this.buckets.forEach((b, i) => {
      if (value <= b) s.counts[i]++;
    });
    s.sum += value;
    s.count++;
  }
  /** Number of observations of a series. */
  count(labels: MetricLabels = {}): number {
    return this.series.get(seriesKey(labels))?.count ?? 0;
  }
  protected lines(s: HistogramSeries): string[] {
    return [
      ...this.buckets.map((b, i) =>
        `${this.name}_bucket${labelText(s.labels, ["le", num(b)])} ${s.counts[i]}`
      ),
      `${this.name}_bucket${labelText(s.labels, ["le", "+Inf"])} ${s.count}`,
      `${this.name}_sum${labelText(s.labels)} ${num(s.sum)}`,
      `${this.name}_count${labelText(s.labels)} ${s.count}`,
    ];
  }
}

/** One series of a {@link CollectedGauge}: its labels and value. */
export type Sample = readonly [MetricLabels, number];

/**
 * A gauge whose series are computed when /metrics is read, from what `collect` gives: for figures
 * the operator holds anyway (its watch cache), so nothing is kept up to date between scrapes.
 * Without a `collect`, or when it throws, the family has no series.
 */
export class CollectedGauge implements Rendered {
  /** The series as they are now; set by whoever owns what it counts. */
  collect: (() => Iterable<Sample>) | undefined;
  constructor(readonly name: string, readonly help: string) {}
  /** Text lines of the family: HELP, TYPE and its series by label set. */
  render(): string[] {
    const rows = new Map<string, string>();
    for (const [labels, value] of this.collect?.() ?? []) {
      rows.set(seriesKey(labels), `${this.name}${labelText(labels)} ${num(value)}`);
    }
    const out = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`];
    for (const k of [...rows.keys()].sort()) out.push(rows.get(k)!);
    return out;
  }
}

const PREFIX = "platform_operator_";
/** Reconcile duration buckets in seconds (controller-runtime's spread, trimmed). */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The operator's metrics. */
export class Metrics {
  /** Reconciles by controller and result (`success`, `error`, `requeue`, `requeue_after`). */
  readonly reconcileTotal = new Counter(
    `${PREFIX}reconcile_total`,
    "Reconciles by controller and result.",
  );
  /** Failed reconciles by controller. */
  readonly reconcileErrors = new Counter(
    `${PREFIX}reconcile_errors_total`,
    "Failed reconciles by controller.",
  );
  /** Reconcile duration (reconcile and writes) by controller. */
  readonly reconcileDuration = new Histogram(
    `${PREFIX}reconcile_duration_seconds`,
    "Time to reconcile one object and carry out its plan, by controller.",
    DURATION_BUCKETS,
  );
  /** Keys waiting in the work queue by controller. */
  readonly queueDepth = new Gauge(
    `${PREFIX}queue_depth`,
    "Keys waiting in the work queue, by controller.",
  );
  /**
   * 1 for each controller of the leading replica's term that has not begun, because a watch of a
   * type it reads has not listed (since the term began); 0 once it has and once the term ends.
   */
  readonly controllerWaiting = new Gauge(
    `${PREFIX}controller_waiting`,
    "1 while this replica leads and the controller has not begun: a watch of a type it reads has not listed, by controller.",
  );
  /** API requests by verb and HTTP status code (0: no answer). */
  readonly apiRequests = new Counter(
    `${PREFIX}api_requests_total`,
    "Kubernetes API requests by verb and code.",
  );
  /** 1 while this replica holds the leader lease. */
  readonly leader = new Gauge(`${PREFIX}leader`, "1 while this replica is the leader, else 0.");
  /** Watch restarts by resource and reason (`timeout`, `idle`, `gone`, `error`). */
  readonly watchRestarts = new Counter(
    `${PREFIX}watch_restarts_total`,
    "Watch restarts by resource and reason.",
  );
  /** Writes skipped because the observed object already matched, by controller. */
  readonly writesSkipped = new Counter(
    `${PREFIX}writes_skipped_total`,
    "Writes not made because the observed object already matched, by controller.",
  );
  /** Events not written because too many were waiting (the EventRecorder dropped the oldest). */
  readonly eventsDropped = new Counter(
    `${PREFIX}events_dropped_total`,
    "Events dropped unwritten because too many were waiting.",
  );

  /**
   * When this replica's previous container was OOM-killed (its Pod's lastState, epoch seconds),
   * 0 if it was not; no series outside a Pod (src/cli/oom_restart.ts).
   */
  readonly lastOomKill = new Gauge(
    `${PREFIX}last_oom_kill_timestamp_seconds`,
    "When this replica's previous container was OOM-killed (its Pod's lastState), epoch seconds; 0 if it was not.",
  );

  /** The process's memory by kind (`rss`, `heap_used`, `heap_total`, `external`), set at scrape. */
  readonly memory = new Gauge(
    `${PREFIX}memory_bytes`,
    "Memory of the operator process: resident, and the JavaScript heap used and reserved.",
  );

  /** Families that other layers add (`add`), rendered after the runtime's own. */
  readonly #added: Rendered[] = [];

  /** Adds a family to /metrics; throws when its name is taken. */
  add(family: Rendered): void {
    if (this.families().some((f) => f.name === family.name)) {
      throw new Error(`metric ${family.name} exists already`);
    }
    this.#added.push(family);
  }

  /** Every family, in render order. */
  families(): Rendered[] {
    return [
      this.reconcileTotal,
      this.reconcileErrors,
      this.reconcileDuration,
      this.queueDepth,
      this.controllerWaiting,
      this.apiRequests,
      this.leader,
      this.watchRestarts,
      this.writesSkipped,
      this.eventsDropped,
      this.lastOomKill,
      this.memory,
      ...this.#added,
    ];
  }

  /** The Prometheus text exposition of every metric (serve with METRICS_CONTENT_TYPE). */
  render(): string {
    return this.families().flatMap((f) => f.render()).join("\n") + "\n";
  }
}
