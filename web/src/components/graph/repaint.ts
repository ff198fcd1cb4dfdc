/** Repaints of drawn items spread over animation frames. sigma restyles a node in one or two microseconds but a
 * brush can change 50,000 nodes: painting at most `perFrame` items per frame bounds any frame's share, while few
 * enough frames (each one re-draws the whole graph) keep the total short. An item queued again before its turn is painted once, with
 * the style of that moment (the paint reads the current style). */
export class RepaintQueue {
  private pending = new Set<number>();
  private frame: number | null = null;

  constructor(
    private paint: (items: number[]) => void,
    private perFrame = 12000,
    private schedule: (f: () => void) => number = (f) => requestAnimationFrame(f),
    private cancel: (h: number) => void = (h) => cancelAnimationFrame(h),
  ) {}

  /** Queue items; a small change with nothing waiting is painted at once, as before. */
  add(items: Iterable<number>): void {
    for (const k of items) this.pending.add(k);
    if (this.frame === null && this.pending.size <= this.perFrame) this.flush();
    else if (this.frame === null) this.frame = this.schedule(this.step);
  }

  /** Items still waiting for their frame. */
  get size(): number {
    return this.pending.size;
  }

  /** Drop what waits (a full repaint or a new graph covers it). */
  clear(): void {
    this.pending.clear();
    if (this.frame !== null) this.cancel(this.frame);
    this.frame = null;
  }

  private flush(): void {
    const batch: number[] = [];
    for (const k of this.pending) {
      if (batch.length === this.perFrame) break;
      batch.push(k);
    }
    for (const k of batch) this.pending.delete(k);
    if (batch.length) this.paint(batch);
  }

  private step = (): void => {
    this.frame = null;
    this.flush();
    if (this.pending.size) this.frame = this.schedule(this.step);
  };
}
