import { useEffect, useState } from "react";
import { collab } from "../api/client";
import type { Model, SharesResponse } from "../api/types";
import type { SavedAnalysis } from "../collab";
import { AnalysesPanel, Author, when } from "./AnalysesPanel";
import { Lineage } from "./Lineage";
import { Modal } from "./Dialogs";
import { ShareDialog } from "./ShareDialog";

function SaveDialog({ mode, initial, busy, onSave, onClose }: {
  mode: "new" | "edit";
  initial: { name: string; notes: string };
  busy: boolean;
  onSave: (name: string, notes: string) => void;
  onClose: () => void;
}) {
  const [name, setName] = useState(initial.name);
  const [notes, setNotes] = useState(initial.notes);
  return (
    <Modal title={mode === "new" ? "Save analysis" : "Analysis details"} onClose={onClose} testid="save-dialog" narrow>
      <form
        className="save-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (name.trim()) onSave(name.trim(), notes);
        }}
      >
        <label>
          Name
          <input value={name} maxLength={200} required onChange={(e) => setName(e.target.value)} placeholder="e.g. int8 convs" data-testid="analysis-name-input" />
        </label>
        <label>
          Notes
          <textarea value={notes} rows={5} maxLength={20000} onChange={(e) => setNotes(e.target.value)} placeholder="What you tried, what to check next…" data-testid="analysis-notes-input" />
        </label>
        <p className="muted small-text">
          {mode === "new"
            ? "Saves the target, the model-wide option and every per-op choice under this name, with its own link. Everyone who can see the model can open it; only you can change it."
            : "Saves the name, the notes and the current optimization state."}
        </p>
        <div className="modal-actions">
          <button type="button" onClick={onClose}>Cancel</button>
          <button className="primary" type="submit" disabled={busy || !name.trim()} data-testid="analysis-save-submit">Save</button>
        </div>
      </form>
    </Modal>
  );
}

const roleText = { owner: "owner", editor: "editor", viewer: "viewer" } as const;

/** Under the header: your role, sharing, the open analysis and its actions, and the analyses / lineage panels. */
export function CollabBar({ model, saved, canSave }: { model: Model; saved: SavedAnalysis; canSave: boolean }) {
  const [shareOpen, setShareOpen] = useState(false);
  const [shares, setShares] = useState<SharesResponse | null>(null);
  const [dialog, setDialog] = useState<"new" | "edit" | null>(null);
  const [panel, setPanel] = useState<"analyses" | "lineage" | null>(null);
  const role = model.your_role ?? shares?.your_role ?? null;
  const a = saved.current;

  useEffect(() => {
    const ac = new AbortController();
    collab.shares(model.id, ac.signal).then(setShares, () => setShares(null));
    return () => ac.abort();
  }, [model.id]);

  const owner = shares?.owner ?? (model.owner ? { ...model.owner, email: "" } : null);
  const opening = saved.status === "loading" || saved.status === "applying";
  return (
    <>
      <div className="collab-bar" data-testid="collab-bar" data-analysis-id={a?.id ?? ""} data-status={saved.status} data-dirty={saved.dirty} data-read-only={saved.readOnly}>
        <span className={`badge role-${role ?? "none"}`} data-testid="your-role" title="Your role on this model">
          {role ? `you: ${roleText[role]}` : "…"}
        </span>
        {role && role !== "owner" && owner && (
          <span className="muted" data-testid="shared-by">
            shared by {owner.name}{owner.email ? ` <${owner.email}>` : ""}
          </span>
        )}
        {role === "owner" && (
          <>
            <button onClick={() => setShareOpen(true)} data-testid="share">Share…</button>
            {shares && (
              <span className="muted small-text" data-testid="share-summary">
                {shares.shares.length ? `shared with ${shares.shares.length}` : "private"}
                {shares.link_sharing ? " · link sharing on" : ""}
              </span>
            )}
          </>
        )}
        <span className="collab-sep" />
        {opening ? (
          <span className="muted" data-testid="analysis-opening">Opening the analysis…</span>
        ) : a ? (
          <span className="analysis-title">
            <span className="muted">Analysis</span> <strong data-testid="analysis-title">{a.name}</strong>{" "}
            <span className="small-text">
              by <Author a={a} /> <span className="muted">· saved {when(a.updated_at)}</span>
            </span>
            {saved.readOnly && <span className="badge badge-warn" data-testid="read-only" title="Only its author can change it; fork it to make your own copy.">read-only</span>}
            {saved.dirty && <span className="chip" data-testid="unsaved">unsaved changes</span>}
          </span>
        ) : (
          <span className="muted">Not saved</span>
        )}
        <span className="spacer" />
        {a && a.can_edit && (
          <>
            <button className="primary" onClick={saved.save} disabled={!saved.dirty || saved.busy || !canSave} data-testid="save">Save</button>
            <button onClick={() => setDialog("edit")} disabled={saved.busy || !canSave} data-testid="edit-details">Details…</button>
          </>
        )}
        {a && !a.can_edit && (
          <button className="primary" onClick={saved.fork} disabled={saved.busy || !canSave} data-testid="fork" title="Make your own copy (with your changes, if any) that you can edit and save">
            Fork
          </button>
        )}
        <button onClick={() => setDialog("new")} disabled={saved.busy || !canSave || opening} data-testid="save-analysis">{a ? "Save as new…" : "Save analysis…"}</button>
        <button className={panel === "analyses" ? "on" : ""} onClick={() => setPanel(panel === "analyses" ? null : "analyses")} data-testid="toggle-analyses" aria-expanded={panel === "analyses"}>
          Analyses
        </button>
        {a && (
          <button className={panel === "lineage" ? "on" : ""} onClick={() => setPanel(panel === "lineage" ? null : "lineage")} data-testid="toggle-lineage" aria-expanded={panel === "lineage"}>
            Lineage
          </button>
        )}
        {panel && (
          <aside className="collab-drawer" data-testid={panel === "analyses" ? "analyses-panel" : "lineage-panel"} aria-label={panel === "analyses" ? "Analyses of this model" : "Lineage"}>
            <div className="modal-head">
              <h3>{panel === "analyses" ? "Analyses of this model" : "Lineage"}</h3>
              <button className="link" onClick={() => setPanel(null)} aria-label="Close panel">✕</button>
            </div>
            {panel === "analyses" && <AnalysesPanel modelId={model.id} current={a?.id ?? null} revision={saved.revision} canDeleteAll={role === "owner"} />}
            {panel === "lineage" && a && (
              <>
                {a.notes && (
                  <div className="notes-text" data-testid="analysis-notes">
                    <h4>Notes</h4>
                    {a.notes}
                  </div>
                )}
                <Lineage modelId={model.id} analysisId={a.id} revision={saved.revision} />
              </>
            )}
          </aside>
        )}
      </div>
      {saved.conflict && (
        <div className="collab-msg error" role="alert" data-testid="conflict">
          This analysis was saved by someone else since you opened it — reload or fork. Your changes are still on screen.
          <button onClick={saved.reload} data-testid="conflict-reload">Reload (drop my changes)</button>
          <button className="primary" onClick={saved.fork} data-testid="conflict-fork">Fork with my changes</button>
        </div>
      )}
      {saved.blocked && a && (
        <div className="collab-msg note" role="status" data-testid="read-only-notice">
          This is {a.owner.name || a.owner.email}'s analysis and it is read-only for you. Fork it to make your own copy, then change it.
          <button className="primary" onClick={saved.fork} disabled={saved.busy}>Fork</button>
          <button className="link" onClick={saved.dismiss}>Dismiss</button>
        </div>
      )}
      {saved.error && (
        <div className="collab-msg error" role="alert" data-testid="analysis-error">
          {saved.error} <button className="link" onClick={saved.dismiss}>Dismiss</button>
        </div>
      )}
      {dialog && (
        <SaveDialog
          mode={dialog}
          initial={dialog === "edit" && a ? { name: a.name, notes: a.notes } : { name: "", notes: "" }}
          busy={saved.busy}
          onClose={() => setDialog(null)}
          onSave={(name, notes) => {
            (dialog === "edit" ? saved.saveDetails(name, notes) : saved.saveAs(name, notes)).then(() => setDialog(null));
          }}
        />
      )}
      {shareOpen && <ShareDialog modelId={model.id} modelName={model.name} analysisId={a?.id} onClose={() => setShareOpen(false)} onChanged={setShares} />}
    </>
  );
}
