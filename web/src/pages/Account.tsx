// Issue 5: my groups (create, add, promote and remove members) and my personal API tokens (create, revoke).
import { useCallback, useEffect, useState } from "react";
import { collab } from "../api/client";
import type { ApiToken, Group } from "../api/types";
import { navigate } from "../router";
import { useSession } from "../session";

export function AccountPage() {
  const session = useSession();
  return (
    <main className="page account-page" data-testid="account-page">
      <header className="topbar">
        <h1>
          <a href="/" onClick={(e) => (e.preventDefault(), navigate("/"))}>Edgescope</a> · Account
        </h1>
        <span className="spacer" />
        {session.me && (
          <span className="muted">
            {session.me.user.email} · <button className="link" onClick={session.signOut}>Sign out</button>
          </span>
        )}
      </header>
      <Groups myId={session.me?.user.id ?? ""} />
      <Tokens />
    </main>
  );
}

function useAction(reload: () => void) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const act = useCallback(
    async (f: () => Promise<unknown>) => {
      setBusy(true);
      setError(null);
      try {
        await f();
        reload();
        return true;
      } catch (e) {
        setError((e as Error).message);
        return false;
      } finally {
        setBusy(false);
      }
    },
    [reload],
  );
  return { busy, error, act };
}

function Groups({ myId }: { myId: string }) {
  const [groups, setGroups] = useState<Group[] | null>(null);
  const [name, setName] = useState("");
  const [emails, setEmails] = useState<Record<string, string>>({});
  const reload = useCallback(() => {
    collab.groups().then((g) => setGroups(g.groups), () => setGroups([]));
  }, []);
  useEffect(reload, [reload]);
  const { busy, error, act } = useAction(reload);

  return (
    <section className="account-section" aria-label="Groups" data-testid="groups">
      <h2>Groups</h2>
      <form
        className="row-form"
        onSubmit={async (e) => {
          e.preventDefault();
          if (name.trim() && (await act(() => collab.createGroup(name.trim())))) setName("");
        }}
      >
        <input placeholder="New group name" aria-label="New group name" value={name} onChange={(e) => setName(e.target.value)} data-testid="group-name" />
        <button className="primary" type="submit" disabled={busy || !name.trim()} data-testid="group-create">Create group</button>
      </form>
      {error && <p className="error" role="alert" data-testid="groups-error">{error}</p>}
      {groups === null && <p className="muted">Loading…</p>}
      {groups?.length === 0 && <p className="muted">You are in no group yet.</p>}
      {groups?.map((g) => {
        const admin = g.members.some((m) => m.id === myId && m.role === "admin");
        return (
          <div key={g.id} className="group-card" data-testid="group" data-group-name={g.name} data-group-id={g.id}>
            <h3>
              {g.name} <span className="muted">({g.members.length} member{g.members.length === 1 ? "" : "s"})</span>
            </h3>
            <ul className="share-list">
              {g.members.map((m) => (
                <li key={m.id} data-member={m.email}>
                  <span>{m.name} &lt;{m.email}&gt;</span> <span className="muted">{m.role}</span>
                  {admin && m.id !== myId && (
                    <button className="link" disabled={busy} data-testid="member-role"
                      onClick={() => act(() => collab.setMemberRole(g.id, m.id, m.role === "admin" ? "member" : "admin"))}
                      aria-label={m.role === "admin" ? `Make ${m.email} a plain member of ${g.name}` : `Make ${m.email} an admin of ${g.name}`}>
                      {m.role === "admin" ? "Make member" : "Make admin"}
                    </button>
                  )}
                  {admin && m.id !== myId && (
                    <button className="link danger" disabled={busy} onClick={() => act(() => collab.removeMember(g.id, m.id))}
                      data-testid="remove-member" aria-label={`Remove ${m.email} from ${g.name}`}>
                      Remove
                    </button>
                  )}
                </li>
              ))}
            </ul>
            {admin && (
              <form
                className="row-form"
                onSubmit={async (e) => {
                  e.preventDefault();
                  const email = (emails[g.id] ?? "").trim();
                  if (email && (await act(() => collab.addMember(g.id, email)))) setEmails((x) => ({ ...x, [g.id]: "" }));
                }}
              >
                <input type="email" placeholder="colleague@example.com" aria-label={`Add a member to ${g.name} by e-mail`} value={emails[g.id] ?? ""}
                  onChange={(e) => setEmails((x) => ({ ...x, [g.id]: e.target.value }))} data-testid="member-email" />
                <button type="submit" disabled={busy} data-testid="member-add">Add member</button>
              </form>
            )}
          </div>
        );
      })}
    </section>
  );
}

function Tokens() {
  const [tokens, setTokens] = useState<ApiToken[] | null>(null);
  const [name, setName] = useState("");
  const [fresh, setFresh] = useState<ApiToken | null>(null);
  const [copied, setCopied] = useState(false);
  const reload = useCallback(() => {
    collab.tokens().then((t) => setTokens(t.tokens), () => setTokens([]));
  }, []);
  useEffect(reload, [reload]);
  const { busy, error, act } = useAction(reload);

  return (
    <section className="account-section" aria-label="API tokens" data-testid="tokens">
      <h2>Personal API tokens</h2>
      <p className="muted">For the CLI and scripts: <code>Authorization: Bearer es_…</code>. A token is shown once, when it is created.</p>
      <form
        className="row-form"
        onSubmit={async (e) => {
          e.preventDefault();
          if (!name.trim()) return;
          let made: ApiToken | null = null;
          if (await act(async () => (made = await collab.createToken(name.trim())))) {
            setFresh(made);
            setCopied(false);
            setName("");
          }
        }}
      >
        <input placeholder="Token name (e.g. laptop CLI)" aria-label="Token name" value={name} onChange={(e) => setName(e.target.value)} data-testid="token-name" />
        <button className="primary" type="submit" disabled={busy || !name.trim()} data-testid="token-create">Create token</button>
      </form>
      {fresh?.token && (
        <div className="new-token" role="status" data-testid="new-token">
          <span>New token “{fresh.name}” — copy it now, it will not be shown again:</span>
          <input readOnly value={fresh.token} aria-label="New API token" onFocus={(e) => e.target.select()} data-testid="new-token-value" />
          <button
            onClick={() => navigator.clipboard?.writeText(fresh.token!).then(() => setCopied(true), () => setCopied(false))}
            data-testid="copy-token"
          >
            {copied ? "Copied" : "Copy"}
          </button>
          <button className="link" onClick={() => setFresh(null)}>Done</button>
        </div>
      )}
      {error && <p className="error" role="alert" data-testid="tokens-error">{error}</p>}
      {tokens === null && <p className="muted">Loading…</p>}
      {tokens?.length === 0 && <p className="muted">No tokens.</p>}
      <ul className="share-list" data-testid="token-list">
        {tokens?.map((t) => (
          <li key={t.id} data-token-id={t.id} data-token-name={t.name} data-revoked={t.revoked}>
            <span>{t.name}</span> <code className="muted">{t.prefix}…</code>{" "}
            <span className="muted">
              created {new Date(t.created_at).toLocaleString()}
              {t.last_used_at ? ` · last used ${new Date(t.last_used_at).toLocaleString()}` : " · never used"}
            </span>{" "}
            {t.revoked ? (
              <span className="muted" data-testid="token-revoked">revoked</span>
            ) : (
              <button className="link danger" disabled={busy} onClick={() => act(() => collab.revokeToken(t.id))} data-testid="revoke-token"
                aria-label={`Revoke the token ${t.name}`}>
                Revoke
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
