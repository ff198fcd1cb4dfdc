/** Pinned group labels (a first view of a few blocks) stay pinned while they have room; zoomed out (a short pane
 * fitted to the whole graph) they would be drawn over each other, so sigma's label grid picks then. */
import type Sigma from "sigma";
import type { Style } from "./style";

/** vertical room a pinned group label needs on screen (12 px text) */
const LABEL_ROOM_PX = 15;

/** Checks crowding on every camera update (and when called); `off` stops it. `gap` is the graph-space distance
 * between pinned labels (Infinity: none pinned); the root element carries `data-labels-crowded` for tests. */
export function watchLabelCrowding(
  s: Sigma,
  style: () => Style | null,
  gap: () => number,
  root: () => HTMLElement | null,
): { check: () => void; off: () => void } {
  const check = () => {
    const st = style(), g = gap();
    if (!st || !Number.isFinite(g)) return;
    // the camera's new state: sigma's own matrix is only brought up to date by its next render
    const o = { cameraState: s.getCamera().getState() };
    const px = Math.abs(s.graphToViewport({ x: 0, y: 0 }, o).y - s.graphToViewport({ x: 0, y: g }, o).y);
    const crowded = px < LABEL_ROOM_PX;
    if (crowded !== !!st.crowded) {
      st.crowded = crowded;
      const el = root();
      if (el) el.dataset.labelsCrowded = String(crowded);
      s.refresh(); // forced labels are read at indexation; a few dozen nodes
    }
  };
  s.getCamera().on("updated", check);
  return { check, off: () => s.getCamera().off("updated", check) };
}
