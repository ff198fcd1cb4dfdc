// The graph's worker, started by the model page as soon as the graph's bytes arrive, before GraphView's code has
// loaded or rendered: the worker parses, builds the hierarchy and lays out the first view meanwhile (messages.ts).
import type { FromWorker, ToWorker } from "./messages";

const newWorker = () => new Worker(new URL("./layout.worker.ts", import.meta.url), { type: "module" });
// Started as this module loads (with the page's bundle), so the worker's script is fetched and compiled while the
// graph is still downloading.
let spare: Worker | null = newWorker();

/** The request number of the worker's first layout (GraphView numbers its own requests after it). */
export const FIRST_REQ = 1;

export class GraphSession {
  private readonly worker: Worker;
  private queue: FromWorker[] = [];
  private listener: ((m: FromWorker) => void) | null = null;
  private laidOut!: () => void;
  /** resolved when the worker's first layout arrives: the graph's worker is idle then (the page's cue to download
   * the table's data, which would otherwise compete with the worker for the CPU) */
  readonly firstLayout = new Promise<void>((res) => (this.laidOut = res));

  /** `json`: the graph's columns document (GET .../graph?format=columns), handed over to the worker */
  constructor(json: ArrayBuffer) {
    performance.mark("edgescope:graph-bytes");
    this.worker = spare ?? newWorker();
    spare = null;
    this.worker.onmessage = (ev: MessageEvent<FromWorker>) => {
      // where the first view's time goes, read by benchmarks/ui.py
      if (ev.data.type !== "error") performance.mark(`edgescope:worker-${ev.data.type}`);
      if (ev.data.type !== "model") this.laidOut();
      return this.listener ? this.listener(ev.data) : this.queue.push(ev.data);
    };
    this.worker.postMessage({ type: "init", req: FIRST_REQ, json } satisfies ToWorker, [json]);
  }

  /** Receive the worker's messages, those that came before first. */
  listen(fn: ((m: FromWorker) => void) | null): void {
    this.listener = fn;
    if (fn) for (const m of this.queue.splice(0)) fn(m);
  }

  post(m: ToWorker): void {
    this.worker.postMessage(m);
  }

  close(): void {
    this.listener = null;
    this.worker.terminate();
  }
}
