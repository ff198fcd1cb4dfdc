import { describe, expect, it } from "vitest";
import { parseRoute, shareLink } from "../src/router";

describe("shareLink", () => {
  it("links to the open analysis, so the recipient sees the saved state", () => {
    const l = shareLink("http://h:1", "M1", "A 2");
    expect(l).toBe("http://h:1/m/M1/a/A%202");
    expect(parseRoute(new URL(l).pathname)).toEqual({ page: "model", id: "M1", analysis: "A 2" });
  });
  it("links to the model when no analysis is open", () => {
    expect(shareLink("http://h:1", "M1", null)).toBe("http://h:1/m/M1");
  });
});
