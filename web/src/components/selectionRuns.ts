/** The timeline's selection outline: selected tasks (a mask in execution order) between k0 and k1 as runs of
 * pixels, each task at least `minPx` wide, neighbours closer than a pixel merged: a brush over 40,000 tasks is
 * stroked as a few runs instead of 40,000 rectangles. `span(k)` is task k's [x0, x1] in pixels. */
export function selectedRuns(mask: Uint8Array, k0: number, k1: number, span: (k: number) => [number, number], minPx = 3): [number, number][] {
  const runs: [number, number][] = [];
  let run: [number, number] | null = null;
  for (let k = k0; k <= k1; k++) {
    if (!mask[k]) continue;
    const [x0, x1] = span(k);
    const a = x0 - 1, b = x0 + Math.max(minPx, x1 - x0) + 1;
    if (run && a <= run[1] + 1) run[1] = Math.max(run[1], b);
    else {
      if (run) runs.push(run);
      run = [a, b];
    }
  }
  if (run) runs.push(run);
  return runs;
}
