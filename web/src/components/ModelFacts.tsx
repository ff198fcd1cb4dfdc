import type { InputRecord, Model, OpsResponse } from "../api/types";
import { shapesUsed } from "./ReanalyseDialog";

/** What the input plan says about one input: declared shape, who set the shape used, the defaults taken, the note. */
function planText(p: InputRecord | undefined): string | undefined {
  if (!p) return undefined;
  const declared = p.declared ? `declared [${p.declared.map((d) => d ?? "?").join(", ")}]` : "rank not declared";
  const by = p.set_by === "user" ? "set by you" : p.set_by === "model" ? "fixed by the model" : "defaults";
  const defaulted = p.defaulted && Object.keys(p.defaulted).length ? ` (${Object.entries(p.defaulted).map(([d, n]) => `${d}=${n}`).join(", ")})` : "";
  return [`${p.dtype}, ${declared}; ${by}${defaulted}`, p.role ? `role: ${p.role}` : "", p.note ?? ""].filter(Boolean).join("\n");
}

/** One line under the header: the input shapes this analysis used, the share of time in tasks whose work could not
 * be resolved ("work unknown"), and the re-analysis action. */
export function ModelFacts({ model, ops, canReanalyse, onReanalyse }: { model: Model; ops: OpsResponse | null; canReanalyse: boolean; onReanalyse: () => void }) {
  const shapes = shapesUsed(model);
  const values = model.input_values ?? {};
  const unknown = ops ? ops.ops.filter((o) => o.work_unknown) : [];
  const unknownShare = ops?.work_unknown?.share ?? unknown.reduce((s, o) => s + o.share, 0);
  return (
    <div className="facts-bar small-text" data-testid="model-facts">
      <span data-testid="shapes-used" title="Input shapes (and values) this analysis ran with: every stage used them">
        <span className="muted">inputs </span>
        {Object.keys(shapes).length === 0 && Object.keys(values).length === 0 ? (
          <span className="muted">{model.status === "ready" ? "as declared" : "defaults"}</span>
        ) : (
          <>
            {Object.entries(shapes).map(([k, v]) => {
              const plan = model.inputs?.find((i) => i.name === k);
              return (
                <code key={k} className={`shape-chip${plan?.set_by === "default" ? " defaulted" : ""}`} data-input={k} data-set-by={plan?.set_by ?? ""} title={planText(plan)}>
                  {k} {v.length ? v.join("×") : "scalar"}
                </code>
              );
            })}
            {Object.entries(values).map(([k, v]) => (
              <code key={`v-${k}`} className="shape-chip" data-value-of={k}>{k} = {v}</code>
            ))}
          </>
        )}
      </span>
      {unknown.length > 0 && (
        <span className="badge badge-warn" data-testid="work-unknown" data-count={unknown.length} data-share={unknownShare}
          title={`The work (MACs, bytes) of these tasks could not be resolved at these shapes, so their predictions on other targets and options are unreliable: ${unknown.slice(0, 12).map((o) => o.name).join(", ")}${unknown.length > 12 ? ", …" : ""}`}>
          work unknown: {unknown.length} task{unknown.length > 1 ? "s" : ""}, {(unknownShare * 100).toFixed(1)}% of the time
        </span>
      )}
      <span className="spacer" />
      <button className="small" onClick={onReanalyse} disabled={!canReanalyse} data-testid="reanalyse-open"
        title={canReanalyse ? "Run the analysis again with other input shapes or values" : "Only the owner and editors can re-analyse this model"}>
        Re-analyse with other inputs…
      </button>
    </div>
  );
}
