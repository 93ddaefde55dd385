/**
 * A running re2-check (re2_check.cc): Google's RE2, the library Envoy's `safe_regex` runs, asked
 * one line at a time. For tests that hold the data-plane model's regexes to it.
 *
 * @module
 */
import { ensureRe2Check } from "./build.ts";

const hex = (s: string) =>
  Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, "0")).join("");

/** A compiled regex as RE2 sees it. */
export type Compiled = { ok: true; programSize: number } | { ok: false; error: string };

/** One re2-check process; `close` ends it. */
export class Re2 {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncIterator<string>;

  private constructor(bin: string) {
    this.#child = new Deno.Command(bin, { stdin: "piped", stdout: "piped", stderr: "inherit" })
      .spawn();
    this.#writer = this.#child.stdin.getWriter();
    let rest = "";
    this.#lines = this.#child.stdout.pipeThrough(new TextDecoderStream()).pipeThrough(
      new TransformStream<string, string>({
        transform(chunk, controller) {
          const parts = (rest + chunk).split("\n");
          rest = parts.pop() ?? "";
          for (const p of parts) controller.enqueue(p);
        },
      }),
    )[Symbol.asyncIterator]();
  }

  /** Builds re2-check if needed, and starts it. */
  static async start(): Promise<Re2> {
    return new Re2(await ensureRe2Check());
  }

  async #ask(command: "R" | "M", arg: string): Promise<string> {
    await this.#writer.write(new TextEncoder().encode(`${command} ${hex(arg)}\n`));
    const next = await this.#lines.next();
    if (next.done) throw new Error("re2-check ended");
    return next.value;
  }

  /** Compiles `regex` as Envoy does; later `matches` calls use it. */
  async compile(regex: string): Promise<Compiled> {
    const answer = await this.#ask("R", regex);
    if (answer.startsWith("ok ")) return { ok: true, programSize: Number(answer.slice(3)) };
    return { ok: false, error: answer.replace(/^error /, "") };
  }

  /** Whether the last compiled regex matches all of `value` (RE2::FullMatch). */
  async matches(value: string): Promise<boolean> {
    return (await this.#ask("M", value)) === "1";
  }

  /** Ends the process. */
  async close(): Promise<void> {
    await this.#writer.close();
    await this.#child.status;
  }
}
