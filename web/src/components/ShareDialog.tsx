import { useCallback, useEffect, useState } from "react";
import { collab } from "../api/client";
import { Modal } from "./Dialogs";
import { shareLink } from "../router";
import type { Group, Share, SharesResponse } from "../api/types";

type ShareRole = "viewer" | "editor";

const whoText = (s: Share) => (s.with.kind === "user" ? `${s.with.name} <${s.with.email}>` : `group ${s.with.name}`);

/** The owner shares a model with people (by e-mail) or groups, revokes shares, and turns link sharing on or off. */
export function ShareDialog({ modelId, modelName, analysisId, onClose, onChanged }: { modelId: string; modelName: string; analysisId?: string | null; onClose: () => void; onChanged?: (s: SharesResponse) => void }) {
  const [data, setData] = useState<SharesResponse | null>(null);
  const [groups, setGroups] = useState<Group[]>([]);
  const [kind, setKind] = useState<"user" | "group">("user");
  const [email, setEmail] = useState("");
  const [groupId, setGroupId] = useState("");
  const [role, setRole] = useState<ShareRole>("viewer");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [copied, setCopied] = useState(false);

  const load = useCallback(async () => {
    const d = await collab.shares(modelId);
    setData(d);
    onChanged?.(d);
  }, [modelId, onChanged]);

  useEffect(() => {
    load().catch((e) => setError((e as Error).message));
    collab.groups().then((g) => setGroups(g.groups), () => setGroups([]));
  }, [load]);

  const act = async (f: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
      await load();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const link = shareLink(location.origin, modelId, analysisId);
  return (
    <Modal title={`Share ${modelName}`} onClose={onClose} testid="share-dialog" narrow>
      <form
        className="share-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (kind === "user" && !email.trim()) return;
          if (kind === "group" && !groupId) return;
          act(async () => {
            await collab.share(modelId, kind === "user" ? { email: email.trim() } : { group_id: groupId }, role);
            setEmail("");
          });
        }}
      >
        <select value={kind} onChange={(e) => setKind(e.target.value as "user" | "group")} aria-label="Share with" data-testid="share-kind">
          <option value="user">a person</option>
          <option value="group" disabled={!groups.length}>a group{groups.length ? "" : " (you are in none)"}</option>
        </select>
        {kind === "user" ? (
          <input type="email" placeholder="colleague@example.com" aria-label="E-mail address" value={email} onChange={(e) => setEmail(e.target.value)} data-testid="share-email" />
        ) : (
          <select value={groupId} onChange={(e) => setGroupId(e.target.value)} aria-label="Group" data-testid="share-group">
            <option value="">choose a group…</option>
            {groups.map((g) => (<option key={g.id} value={g.id}>{g.name} ({g.members.length})</option>))}
          </select>
        )}
        <select value={role} onChange={(e) => setRole(e.target.value as ShareRole)} aria-label="Role" data-testid="share-role">
          <option value="viewer">can view</option>
          <option value="editor">can edit</option>
        </select>
        <button className="primary" type="submit" disabled={busy} data-testid="share-submit">Share</button>
      </form>
      <p className="muted small-text">Viewers see everything and save and fork their own analyses. Editors can also re-analyse the model. Only you can share or delete it.</p>
      {error && <p className="error" role="alert" data-testid="share-error">{error}</p>}
      <h3 className="collab-h3">People and groups with access</h3>
      {!data ? (
        <p className="muted">Loading…</p>
      ) : (
        <ul className="share-list" data-testid="share-list">
          {data.owner && (
            <li>
              <span>{data.owner.name} &lt;{data.owner.email}&gt;</span>
              <span className="badge">owner</span>
            </li>
          )}
          {data.shares.map((s) => (
            <li key={s.id} data-share-id={s.id} data-who={s.with.kind === "user" ? s.with.email : s.with.name}>
              <span>{whoText(s)}</span>
              <select
                value={s.role}
                aria-label={`Role of ${whoText(s)}`}
                disabled={busy}
                onChange={(e) => act(() => collab.share(modelId, s.with.kind === "user" ? { email: s.with.email } : { group_id: s.with.id }, e.target.value as ShareRole))}
              >
                <option value="viewer">viewer</option>
                <option value="editor">editor</option>
              </select>
              <button className="link danger" disabled={busy} onClick={() => act(() => collab.revoke(modelId, s.id))} data-testid="revoke-share" aria-label={`Revoke the share with ${whoText(s)}`}>
                Revoke
              </button>
            </li>
          ))}
          {data.shares.length === 0 && <li className="muted">Not shared with anyone yet.</li>}
        </ul>
      )}
      <h3 className="collab-h3">Link sharing</h3>
      <label className="check">
        <input
          type="checkbox"
          checked={!!data?.link_sharing}
          disabled={!data}
          onChange={(e) => {
            const on = e.target.checked;
            setData((d) => d && { ...d, link_sharing: on }); // shown at once; reloaded (or reverted) after the request
            act(() => collab.setLink(modelId, on)).then(() => load().catch(() => undefined));
          }}
          data-testid="link-sharing"
        />
        Anyone signed in who has the link can view
      </label>
      {data?.link_sharing && (
        <div className="share-link">
          <input readOnly value={link} aria-label={analysisId ? "Link to this analysis" : "Link to this model"} onFocus={(e) => e.target.select()} data-testid="share-link" />
          <button type="button" onClick={() => navigator.clipboard?.writeText(link).then(() => setCopied(true), () => setCopied(false))}>
            {copied ? "Copied" : "Copy"}
          </button>
        </div>
      )}
      <p className="muted small-text">Links to this model's analyses work for everyone who can see the model.</p>
    </Modal>
  );
}
