// Saved analyses on the model page: load one into the page, save, save as, fork, detect conflicts.
// The page keeps the optimization state; this hook only reads it and, when an analysis is opened,
// hands the page the analysis's state plus the per-op option tables its overrides need.
import { useCallback, useEffect, useRef, useState } from "react";
import { api, ApiError, collab } from "./api/client";
import type { Analysis, AnalysisState, OpOptions, OptionTable } from "./api/types";
import { navigate } from "./router";

export function sameState(a: AnalysisState | null | undefined, b: AnalysisState | null | undefined): boolean {
  if (!a || !b) return a === b;
  if (a.target !== b.target || a.model_wide !== b.model_wide) return false;
  const ka = Object.keys(a.overrides);
  if (ka.length !== Object.keys(b.overrides).length) return false;
  return ka.every((k) => a.overrides[k] === b.overrides[k]);
}

export const analysisUrl = (a: Pick<Analysis, "model_id" | "id">) => `/m/${encodeURIComponent(a.model_id)}/a/${encodeURIComponent(a.id)}`;

export type LoadStatus = "none" | "loading" | "applying" | "applied" | "error";

export interface SavedAnalysis {
  /** the analysis this page shows (null: an unsaved scratch state) */
  current: Analysis | null;
  status: LoadStatus;
  /** 404 or 401 while fetching the analysis: the page shows not-found / sign-in instead */
  missing: number | null;
  error: string | null;
  /** someone else's analysis: the page refuses edits; fork to change it */
  readOnly: boolean;
  dirty: boolean;
  /** the last save was refused with 409 */
  conflict: boolean;
  /** an edit was attempted on a read-only analysis */
  blocked: boolean;
  busy: boolean;
  /** bumps after every create/save/fork so lists and lineage refetch */
  revision: number;
  onBlocked: () => void;
  dismiss: () => void;
  save: () => Promise<void>;
  saveDetails: (name: string, notes: string) => Promise<void>;
  saveAs: (name: string, notes: string) => Promise<void>;
  fork: () => Promise<void>;
  reload: () => void;
}

interface Opts {
  modelId: string;
  analysisId: string | null;
  targets: string[] | null;
  table: OptionTable | null;
  target: string | null;
  setTarget: (t: string) => void;
  state: AnalysisState | null;
  apply: (state: AnalysisState, perOp: Record<string, OpOptions>) => void;
}

const key = (a: Analysis) => `${a.id}@${a.version}`;

export function useSavedAnalysis(o: Opts): SavedAnalysis {
  const [current, setCurrent] = useState<Analysis | null>(null);
  const [status, setStatus] = useState<LoadStatus>(o.analysisId ? "loading" : "none");
  const [missing, setMissing] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [conflict, setConflict] = useState(false);
  const [blocked, setBlocked] = useState(false);
  const [busy, setBusy] = useState(false);
  const [revision, setRevision] = useState(0);
  const [reloads, setReloads] = useState(0);
  // the analysis (id@version) whose state is on screen, so it is applied once
  const applied = useRef<string | null>(null);
  const currentRef = useRef<Analysis | null>(null);
  currentRef.current = current;
  // an analysis we just created or forked and navigated to: no need to fetch it
  const adopted = useRef<string | null>(null);

  // fetch the analysis named by the URL (unless we just created it and already hold it)
  useEffect(() => {
    setMissing(null);
    setConflict(false);
    setBlocked(false);
    if (!o.analysisId) {
      setCurrent(null);
      setStatus("none");
      return;
    }
    if (adopted.current === o.analysisId) return void (adopted.current = null);
    const ac = new AbortController();
    setStatus("loading");
    collab.analysis(o.modelId, o.analysisId, ac.signal).then(
      (a) => {
        applied.current = null;
        setCurrent(a);
        setStatus("applying");
        setError(null);
      },
      (e) => {
        if (ac.signal.aborted) return;
        if (e instanceof ApiError && (e.status === 404 || e.status === 401)) setMissing(e.status);
        else (setError(`Could not load the analysis: ${(e as Error).message}`), setStatus("error"));
      },
    );
    return () => ac.abort();
  }, [o.modelId, o.analysisId, reloads]);

  // put its state on the page once the option table of its target is loaded
  const { table, target, setTarget, apply, modelId, targets } = o;
  useEffect(() => {
    if (!current || applied.current === key(current) || !table || !target || !targets) return;
    const st = current.state;
    if (!targets.includes(st.target)) {
      setError(`This analysis is for target ${st.target}, which this model was not analysed for.`);
      setStatus("error");
      applied.current = key(current);
      return;
    }
    if (target !== st.target) return setTarget(st.target);
    if (table.target !== st.target) return; // the page is still loading that target's table
    if (!table.presets.some((p) => p.name === st.model_wide)) {
      setError(`Unknown model-wide option ${st.model_wide}.`);
      setStatus("error");
      applied.current = key(current);
      return;
    }
    let stop = false;
    const k = key(current);
    const ops = Object.keys(st.overrides);
    Promise.all(ops.map((op) => api.opOptions(modelId, op, st.target))).then(
      (tables) => {
        if (stop) return;
        const perOp: Record<string, OpOptions> = {};
        ops.forEach((op, i) => (perOp[op] = tables[i]));
        const bad = ops.find((op) => !perOp[op].combos.includes(st.overrides[op]));
        if (bad) {
          setError(`Op ${bad} has no option ${st.overrides[bad]} any more; the analysis cannot be shown.`);
          setStatus("error");
        } else {
          apply({ target: st.target, model_wide: st.model_wide, overrides: { ...st.overrides } }, perOp);
          setStatus("applied");
        }
        applied.current = k;
      },
      (e) => {
        if (stop) return;
        setError(`Could not load the options of the analysis's ops: ${(e as Error).message}`);
        setStatus("error");
        applied.current = k;
      },
    );
    return () => {
      stop = true;
    };
  }, [current, table, target, targets, setTarget, apply, modelId]);

  const adopt = useCallback((a: Analysis, go: boolean) => {
    applied.current = key(a); // its state is what is on screen already
    currentRef.current = a;
    setCurrent(a);
    setStatus("applied");
    setConflict(false);
    setBlocked(false);
    setError(null);
    setRevision((r) => r + 1);
    if (go) (adopted.current = a.id), navigate(analysisUrl(a));
  }, []);

  const run = useCallback(async (f: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) setConflict(true);
      else setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  }, []);

  const state = o.state;
  const save = useCallback(
    () => run(async () => {
      const c = currentRef.current;
      if (!c || !state) return;
      adopt(await collab.saveAnalysis(modelId, c.id, { version: c.version, state }), false);
    }),
    [run, adopt, modelId, state],
  );
  const saveDetails = useCallback(
    (name: string, notes: string) => run(async () => {
      const c = currentRef.current;
      if (!c || !state) return;
      adopt(await collab.saveAnalysis(modelId, c.id, { version: c.version, name, notes, state }), false);
    }),
    [run, adopt, modelId, state],
  );
  const saveAs = useCallback(
    (name: string, notes: string) => run(async () => {
      if (!state) return;
      adopt(await collab.createAnalysis(modelId, { name, notes, state }), true);
    }),
    [run, adopt, modelId, state],
  );
  const fork = useCallback(
    () => run(async () => {
      const c = currentRef.current;
      if (!c || !state) return;
      adopt(await collab.fork(modelId, c.id, { state }), true);
    }),
    [run, adopt, modelId, state],
  );
  const reload = useCallback(() => {
    setConflict(false);
    setReloads((n) => n + 1);
  }, []);

  const readOnly = !!current && !current.can_edit;
  const dirty = status === "applied" && !!current && !!state && !sameState(state, current.state);
  return {
    current, status, missing, error, readOnly, dirty, conflict, blocked, busy, revision,
    onBlocked: useCallback(() => setBlocked(true), []),
    dismiss: useCallback(() => (setBlocked(false), setError(null)), []),
    save, saveDetails, saveAs, fork, reload,
  };
}
