import { describe, expect, it } from "vitest";
import { selectedRuns } from "../src/components/selectionRuns";

describe("timeline selection outline", () => {
  it("merges selected neighbours closer than a pixel into one run and keeps apart the rest", () => {
    // ten tasks of 0.5 px each from x = 0, then task 10 far away
    const span = (k: number): [number, number] => (k < 10 ? [k * 0.5, k * 0.5 + 0.5] : [100, 101]);
    const mask = new Uint8Array(11);
    for (const k of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) mask[k] = 1;
    const runs = selectedRuns(mask, 0, 10, span);
    expect(runs.length).toBe(2);
    expect(runs[0][0]).toBe(-1);
    expect(runs[1]).toEqual([99, 104]); // at least 3 px wide, 1 px margin each side
  });

  it("outlines nothing without a selection and only within the drawn range", () => {
    const span = (k: number): [number, number] => [k * 10, k * 10 + 5];
    const mask = Uint8Array.from([1, 0, 0, 1]);
    expect(selectedRuns(new Uint8Array(4), 0, 3, span)).toEqual([]);
    expect(selectedRuns(mask, 1, 3, span)).toEqual([[29, 36]]);
  });
});
