// Issue 6: where the selected op comes from in the user's code, and a read-only code browser.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import hljs from "highlight.js/lib/core";
import python from "highlight.js/lib/languages/python";
import { api } from "../api/client";
import type { Op, SourceFiles } from "../api/types";
import { Modal } from "./Dialogs";

hljs.registerLanguage("python", python);

/** Highlight a whole file, then split the HTML into lines (re-opening spans that cross a newline). */
export function highlightLines(text: string, path: string): string[] {
  const html = path.endsWith(".py") ? hljs.highlight(text, { language: "python", ignoreIllegals: true }).value : escapeHtml(text);
  const out: string[] = [];
  const open: string[] = [];
  for (const raw of html.split("\n")) {
    const prefix = open.join("");
    for (const m of raw.matchAll(/<span[^>]*>|<\/span>/g)) {
      if (m[0] === "</span>") open.pop();
      else open.push(m[0]);
    }
    out.push(prefix + raw + "</span>".repeat(open.length));
  }
  return out;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function SourcePanel({ modelId, op }: { modelId: string; op: Op | null }) {
  const [files, setFiles] = useState<SourceFiles["files"] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [browse, setBrowse] = useState<{ path: string; lines: number[] } | null>(null);

  useEffect(() => {
    const ac = new AbortController();
    setFiles(null);
    api.sources(modelId, ac.signal).then(
      (r) => setFiles(r.files),
      (e) => !ac.signal.aborted && setErr(e.message),
    );
    return () => ac.abort();
  }, [modelId]);

  const locs = op?.locations ?? [];
  let body: React.ReactNode;
  if (err) body = <span className="error">{err}</span>;
  else if (files === null) body = <span className="muted">Loading sources…</span>;
  else if (files.length === 0 && locs.length === 0) body = <span className="muted" data-testid="no-sources">no source locations for this model</span>;
  else if (!op) body = <span className="muted">Select a task to see the code that produced it.</span>;
  else if (locs.length === 0) body = <span className="muted">no source location for {op.name}</span>;
  else
    body = (
      <ul className="code-locs">
        {locs.map((l) => (
          <li key={`${l.file}:${l.line}`} data-testid="code-loc">
            <button
              className="link"
              data-testid="code-loc-file"
              onClick={() => setBrowse({ path: l.file, lines: locs.filter((x) => x.file === l.file).map((x) => x.line) })}
              title="Open in the code browser"
            >
              {l.file}:{l.line}
            </button>{" "}
            <code>{l.code}</code>
          </li>
        ))}
      </ul>
    );

  return (
    <section className="code-panel" aria-label="Source location" data-testid="code-panel">
      <strong>Code</strong> {body}
      {browse && files && (
        <CodeBrowser modelId={modelId} files={files} path={browse.path} lines={browse.lines} onClose={() => setBrowse(null)} />
      )}
    </section>
  );
}

function CodeBrowser(p: { modelId: string; files: SourceFiles["files"]; path: string; lines: number[]; onClose: () => void }) {
  const [path, setPath] = useState(p.path);
  const [text, setText] = useState<{ path: string; text: string } | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const scroller = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const ac = new AbortController();
    setErr(null);
    api.source(p.modelId, path, ac.signal).then(setText, (e) => !ac.signal.aborted && setErr(e.message));
    return () => ac.abort();
  }, [p.modelId, path]);

  const lines = useMemo(() => (text && text.path === path ? highlightLines(text.text, path) : null), [text, path]);
  const marked = useMemo(() => new Set(path === p.path ? p.lines : []), [path, p.path, p.lines]);

  useLayoutEffect(() => {
    if (!lines) return;
    const first = scroller.current?.querySelector<HTMLElement>(".code-line.hl");
    first?.scrollIntoView({ block: "center" });
  }, [lines]);

  return (
    <Modal title={`Source: ${path}`} onClose={p.onClose} testid="code-browser">
      <div className="code-browser">
        <ul className="code-tree" aria-label="Files" data-testid="code-tree">
          {p.files.map((f) => (
            <li key={f.path}>
              <button className={`link${f.path === path ? " current" : ""}`} aria-current={f.path === path} onClick={() => setPath(f.path)}>
                {f.path}
              </button>
            </li>
          ))}
        </ul>
        <div className="code-view hljs" ref={scroller} data-testid="code-view">
          {err && <p className="error" role="alert">{err}</p>}
          {!err && !lines && <p className="muted pad">Loading…</p>}
          {lines?.map((h, i) => (
            <div key={i} className={`code-line${marked.has(i + 1) ? " hl" : ""}`} data-line={i + 1}>
              <span className="ln">{i + 1}</span>
              <span className="src" dangerouslySetInnerHTML={{ __html: h || " " }} />
            </div>
          ))}
        </div>
      </div>
    </Modal>
  );
}
