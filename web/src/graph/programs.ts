import type Sigma from "sigma";
import { EdgeArrowProgram, EdgeLineProgram, NodeCircleProgram, NodePointProgram } from "sigma/rendering";
import type { RenderParams } from "sigma/types";

/** Sigma's own test for "the camera is moving" (the one behind hideEdgesOnMove / hideLabelsOnMove). */
export function cameraMoving(s: Sigma): boolean {
  const m = s.getMouseCaptor();
  return s.getCamera().isAnimated() || m.isMoving || m.draggedEvents > 0 || m.currentWheelDirection !== 0;
}

const waiting = new WeakSet<Sigma>();
/** Draw once more when the camera stops, so what was skipped while it moved (edges, picking) comes back. */
function renderWhenStill(s: Sigma): void {
  if (waiting.has(s)) return;
  waiting.add(s);
  const poll = () => {
    if (cameraMoving(s)) return void requestAnimationFrame(poll);
    waiting.delete(s);
    s.scheduleRender();
  };
  requestAnimationFrame(poll);
}

/**
 * Hover detection that does nothing while the camera moves. Sigma reads the picking texture back (readPixels) on
 * every mouse move, drags included; with software WebGL each read waits for the frame in flight to finish, which
 * doubled the frame time of a pan over 50,000 nodes. Nothing can be hovered mid-drag anyway.
 */
export function pickOnlyWhenStill(s: Sigma): void {
  const r = s as unknown as { getNodeAtPosition(p: { x: number; y: number }): string | null };
  const pick = r.getNodeAtPosition.bind(s);
  r.getNodeAtPosition = (p) => (cameraMoving(s) ? null : pick(p));
}

const edgesHidden = new WeakSet<Sigma>();
/** Whether the Moving* edge programs skip drawing while the camera moves (for big graphs). */
export function hideEdgesWhileMoving(s: Sigma, on: boolean): void {
  if (on) edgesHidden.add(s);
  else edgesHidden.delete(s);
}

// a mixin's constructor must take any[]
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type NodeProgramCtor = new (...args: any[]) => {
  renderer: Sigma;
  pickProgram: unknown;
  render(params: RenderParams): void;
};
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type EdgeProgramCtor = new (...args: any[]) => {
  render(params: RenderParams): void;
};

/**
 * A node program that skips sigma's picking pass (every node drawn a second time, into the off-screen texture that
 * hover and click read) while the camera moves. Without a GPU that pass doubles each frame's software-rendered
 * WebGL work; nothing reads the texture mid-move, and the render that ends a move (sigma draws once more when the
 * animation or drag stops) draws it again.
 */
function skipPickingOnMove<T extends NodeProgramCtor>(Base: T): T {
  return class extends Base {
    render(params: RenderParams): void {
      if (!this.pickProgram || !cameraMoving(this.renderer)) return super.render(params);
      const pick = this.pickProgram;
      this.pickProgram = null;
      try {
        super.render(params);
      } finally {
        this.pickProgram = pick;
      }
      renderWhenStill(this.renderer);
    }
  };
}

/**
 * An edge program that draws nothing while the camera moves (tens of thousands of edges are too slow for software
 * WebGL) and is drawn again by one plain render when it stops. It replaces sigma's hideEdgesOnMove, which ends each
 * drag with a full refresh (every node and edge processed again: a 200-300 ms hitch at 50,000 nodes).
 */
function skipOnMove<T extends EdgeProgramCtor>(Base: T): T {
  return class extends Base {
    // compound programs (arrow = line + head) keep no `renderer` of their own: take it from the constructor
    private readonly sigma: Sigma;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    constructor(...args: any[]) {
      super(...args);
      this.sigma = args[2] as Sigma; // (gl, pickingBuffer, renderer)
    }
    render(params: RenderParams): void {
      if (!edgesHidden.has(this.sigma) || !cameraMoving(this.sigma)) return super.render(params);
      renderWhenStill(this.sigma);
    }
  };
}

export const MovingNodePointProgram = skipPickingOnMove(NodePointProgram as unknown as NodeProgramCtor) as unknown as typeof NodePointProgram;
export const MovingNodeCircleProgram = skipPickingOnMove(NodeCircleProgram as unknown as NodeProgramCtor) as unknown as typeof NodeCircleProgram;
export const MovingEdgeLineProgram = skipOnMove(EdgeLineProgram as unknown as EdgeProgramCtor) as unknown as typeof EdgeLineProgram;
export const MovingEdgeArrowProgram = skipOnMove(EdgeArrowProgram as unknown as EdgeProgramCtor) as unknown as typeof EdgeArrowProgram;
