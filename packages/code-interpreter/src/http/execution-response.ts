// The streamed /execute body: one JSON line per item, a keepalive line after a quiet spell (so a proxy keeps the
// connection and a vanished client is noticed on the next write), and always `end_of_execution` last. Output is
// bounded per run: past the limit, stdout/stderr are cut with a marker and results dropped with a note, so a run
// that prints gigabytes cannot stall the stream or the server's memory.
import type { ServerResponse } from "node:http";
import type { ExecutionItem } from "../contexts/execution-item.js";
import { pyJson } from "./py-json.js";

export interface ExecutionResponseOptions {
  keepaliveMs: number;
  /** stdout + stderr characters sent per run. */
  maxOutputChars: number;
  /** Serialized result bytes sent per run. */
  maxResultBytes: number;
}

function mib(n: number): string {
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

export class ExecutionResponse {
  readonly #res: ServerResponse;
  readonly #opts: ExecutionResponseOptions;
  readonly #timer: NodeJS.Timeout;
  #lastWrite = Date.now();
  #outputChars = 0;
  #outputCut = false;
  #resultBytes = 0;
  #resultsDropped = 0;
  #ended = false;

  constructor(res: ServerResponse, opts: ExecutionResponseOptions) {
    this.#res = res;
    this.#opts = opts;
    res.writeHead(200, { "Content-Type": "application/x-ndjson", "Cache-Control": "no-store" });
    // The head goes out now: the SDK waits for it (requestTimeoutMs) before it starts its execution timer.
    res.flushHeaders();
    this.#timer = setInterval(() => {
      if (Date.now() - this.#lastWrite >= opts.keepaliveMs) this.#line('{"type": "keepalive"}');
    }, Math.max(100, Math.floor(opts.keepaliveMs / 5)));
  }

  write(item: ExecutionItem): void {
    if (item.type === "stdout" || item.type === "stderr") {
      this.#writeOutput(item);
      return;
    }
    if (item.type === "result") {
      const line = pyJson(item);
      if (this.#resultBytes + line.length > this.#opts.maxResultBytes) {
        this.#resultsDropped++;
        return;
      }
      this.#resultBytes += line.length;
      this.#line(line);
      return;
    }
    this.#line(pyJson(item));
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#timer);
    if (this.#resultsDropped > 0) {
      this.#line(
        pyJson({
          type: "stderr",
          text: `[burrow: ${this.#resultsDropped} result(s) not sent: this run's results exceeded ${mib(this.#opts.maxResultBytes)}]\n`,
          timestamp: new Date().toISOString(),
        }),
      );
    }
    this.#line('{"type": "end_of_execution"}');
    if (!this.#res.destroyed) this.#res.end();
  }

  #writeOutput(item: Extract<ExecutionItem, { type: "stdout" | "stderr" }>): void {
    if (this.#outputCut) return;
    const room = this.#opts.maxOutputChars - this.#outputChars;
    if (item.text.length <= room) {
      this.#outputChars += item.text.length;
      this.#line(pyJson(item));
      return;
    }
    this.#outputCut = true;
    const text = `${item.text.slice(0, Math.max(0, room))}\n[burrow: output truncated: this run printed more than ${mib(this.#opts.maxOutputChars)}; the rest is not shown]\n`;
    this.#line(pyJson({ ...item, text }));
  }

  #line(line: string): void {
    this.#lastWrite = Date.now();
    if (this.#res.destroyed || this.#res.writableEnded) return;
    this.#res.write(`${line}\n`);
  }
}
