import type Sigma from "sigma";
import { NodeCircleProgram, NodePointProgram } from "sigma/rendering";
import type { RenderParams } from "sigma/types";

/** Sigma's own test for "the camera is moving" (the one behind hideEdgesOnMove / hideLabelsOnMove). */
export function cameraMoving(s: Sigma): boolean {
  const m = s.getMouseCaptor();
  return s.getCamera().isAnimated() || m.isMoving || m.draggedEvents > 0 || m.currentWheelDirection !== 0;
}

// a mixin's constructor must take any[]
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type NodeProgramCtor = new (...args: any[]) => {
  renderer: Sigma;
  pickProgram: unknown;
  render(params: RenderParams): void;
};

/**
 * A node program that skips sigma's picking pass (every node drawn a second time, into the off-screen texture that
 * hover and click read) while the camera moves. Without a GPU that pass doubles each frame's software-rendered
 * WebGL work; nothing reads the texture mid-move, and the render that ends a move (sigma draws once more when the
 * animation or drag stops, to bring back edges and labels) draws it again.
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
    }
  };
}

export const MovingNodePointProgram = skipPickingOnMove(NodePointProgram as unknown as NodeProgramCtor) as unknown as typeof NodePointProgram;
export const MovingNodeCircleProgram = skipPickingOnMove(NodeCircleProgram as unknown as NodeProgramCtor) as unknown as typeof NodeCircleProgram;
