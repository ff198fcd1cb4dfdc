import { useCallback, useEffect, useRef, useState } from "react";
import { api } from "../api/client";
import { shapesUsed } from "../components/ReanalyseDialog";
import { UploadForm } from "../components/UploadForm";
import type { Model } from "../api/types";
import { fmtBytes } from "../format";
import { useSession } from "../session";
import { ACCOUNT_URL, navigate } from "../router";

export function StageList({ model }: { model: Model }) {
  if (!model.stages.length)
    return (
      <p className="muted" aria-live="polite">
        {model.status === "queued" ? "Waiting for a worker…" : `${model.stage}: ${model.progress}%`}
      </p>
    );
  return (
    <ol className="stages" aria-label={`Progress of ${model.name}`}>
      {model.stages.map((s) => (
        <li key={s.name} className={`stage stage-${s.status}`} data-stage={s.name} data-status={s.status}>
          <span className="stage-dot" aria-hidden="true" />
          {s.name}
          <span className="sr-only">: {s.status}</span>
          {s.seconds != null && <span className="muted"> {s.seconds.toFixed(1)} s</span>}
          {s.note && s.status === "running" && <span className="muted stage-note"> {s.note}</span>}
        </li>
      ))}
    </ol>
  );
}

/** "input_ids 1×16, mask 1×16 · sr = 16000": the shapes the last analysis used (or the ones set for it). */
export function inputsText(m: Model): string {
  const shapes = shapesUsed(m);
  const parts = Object.entries(shapes).map(([k, v]) => `${k} ${v.length ? v.join("×") : "scalar"}`);
  const values = Object.entries(m.input_values ?? {}).map(([k, v]) => `${k} = ${v}`);
  return [parts.join(", "), values.join(", ")].filter(Boolean).join(" · ");
}

function ModelRow({ m, onDelete }: { m: Model; onDelete: ((id: string) => void) | null }) {
  const ready = m.status === "ready";
  const t = m.summary?.targets[0];
  const [copied, setCopied] = useState(false);
  const inputs = inputsText(m);
  const copy = () => navigator.clipboard?.writeText(m.url).then(() => (setCopied(true), setTimeout(() => setCopied(false), 1200)), () => undefined);
  return (
    <li className={`model-row status-${m.status}`} data-model-id={m.id} data-status={m.status}>
      <div className="model-main">
        <a href={`/m/${m.id}`} onClick={(e) => (e.preventDefault(), navigate(`/m/${m.id}`))} className="model-name">
          {m.name}
        </a>
        <span className="muted">
          {m.format} · {fmtBytes(m.size_bytes)} · {new Date(m.created_at).toLocaleString()}
        </span>
        <span className={`badge badge-${m.status}`} data-testid="model-status">{m.status}</span>
        {!onDelete && m.owner && <span className="muted" data-testid="shared-by">shared by {m.owner.name}</span>}
      </div>
      <div className="model-meta small-text">
        <span className="share-url" data-testid="share-url" title="Shareable URL of this model's page">
          <code>{m.url}</code>
          <button className="link" onClick={copy} aria-label={`Copy the link to ${m.name}`}>{copied ? "copied" : "copy"}</button>
        </span>
        <span className="muted" data-testid="inputs-used" title={ready ? "Input shapes the analysis used" : "Input shapes set for the analysis"}>
          inputs: {inputs || (ready ? "as declared" : "defaults")}
        </span>
      </div>
      {m.status !== "ready" && <StageList model={m} />}
      {m.status === "failed" && (
        <p className="error" role="alert" data-testid="model-error">
          {m.error ?? "Processing failed."}{" "}
          <a href={`/m/${m.id}`} onClick={(e) => (e.preventDefault(), navigate(`/m/${m.id}`))}>Open it to re-analyse with other inputs</a>
        </p>
      )}
      {ready && m.summary && t && (
        <div className="muted">
          {m.summary.task_count} tasks ·{" "}
          <span data-testid="list-latency" data-value={t.latency_ms} title={t.wall_latency_ms && t.wall_latency_ms > t.latency_ms ? `CPU time per run; the machine was busy: ${t.wall_latency_ms.toFixed(2)} ms wall time` : undefined}>
            {t.latency_ms.toFixed(2)} ms
          </span>{" "}
          on {t.target} ({t.measured ? "measured" : "predicted"}) ·{" "}
          {fmtBytes(m.summary.weight_bytes)} weights
        </div>
      )}
      {onDelete && (
        <button className="link danger" onClick={() => onDelete(m.id)} aria-label={`Delete ${m.name}`}>
          Delete
        </button>
      )}
    </li>
  );
}

export function ModelListPage() {
  const [models, setModels] = useState<Model[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const session = useSession();
  const [scope, setScope] = useState<"mine" | "shared">("mine");
  const scopeNow = useRef(scope);
  scopeNow.current = scope;

  const refresh = useCallback(async () => {
    try {
      const r = await api.listModels(undefined, scope);
      if (scopeNow.current !== scope) return; // the other tab was chosen meanwhile
      setModels(r.models);
      setLoadError(null);
    } catch (e) {
      setLoadError((e as Error).message);
    }
  }, [scope]);

  useEffect(() => {
    refresh();
  }, [refresh]);

  // poll while anything is in flight
  const busy = models?.some((m) => m.status === "queued" || m.status === "running") ?? false;
  useEffect(() => {
    if (!busy) return;
    const t = setInterval(refresh, 700);
    return () => clearInterval(t);
  }, [busy, refresh]);

  const onUploaded = useCallback(() => {
    if (scope === "mine") refresh();
    else setScope("mine");
  }, [refresh, scope]);

  const onDelete = async (id: string) => {
    await api.deleteModel(id);
    refresh();
  };

  return (
    <main className="page list-page">
      <header className="topbar">
        <h1>Edgescope</h1>
        <span className="muted">Profile a model op by op; see what quantization, palettization and pruning would do.</span>
        <span className="spacer" />
        {session.me && (
          <span className="muted" data-testid="whoami">
            {session.me.user.email} · <a href={ACCOUNT_URL} data-testid="account-link" onClick={(e) => (e.preventDefault(), navigate(ACCOUNT_URL))}>Account</a> · <button className="link" onClick={session.signOut}>Sign out</button>
          </span>
        )}
      </header>
      <UploadForm onUploaded={onUploaded} />
      <section aria-label="Models">
        <div className="tabs" role="tablist" aria-label="Which models">
          {(["mine", "shared"] as const).map((s) => (
            <button key={s} role="tab" aria-selected={scope === s} className={scope === s ? "tab on" : "tab"} data-testid={`tab-${s}`}
              onClick={() => s !== scope && (setModels(null), setScope(s))}>
              {s === "mine" ? "My models" : "Shared with me"}
            </button>
          ))}
        </div>
        {loadError && <p className="error" role="alert">Could not load models: {loadError}</p>}
        {models === null && !loadError && <p className="muted">Loading…</p>}
        {models?.length === 0 && (
          <p className="muted">{scope === "mine" ? "No models yet. Upload one above." : "Nobody has shared a model with you yet."}</p>
        )}
        <ul className="model-list" data-testid="model-list" data-scope={scope}>
          {models?.map((m) => <ModelRow key={m.id} m={m} onDelete={scope === "mine" ? onDelete : null} />)}
        </ul>
      </section>
    </main>
  );
}
