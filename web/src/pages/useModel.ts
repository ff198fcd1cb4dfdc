import { useCallback, useEffect, useState } from "react";
import { api, ApiError } from "../api/client";
import { takeEarly } from "../api/prefetch";
import type { Model } from "../api/types";

/** The model, polled until it is ready or failed; `restart(m)` after queueing a re-analysis polls again. */
export function useModel(id: string) {
  const [model, setModel] = useState<Model | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [missing, setMissing] = useState<number | null>(null);
  const [round, setRound] = useState(0);
  useEffect(() => {
    let stop = false;
    let timer: ReturnType<typeof setTimeout>;
    const tick = async (first: boolean) => {
      try {
        const m = await (first && round === 0 ? takeEarly(`model:${id}`, () => api.getModel(id)) : api.getModel(id));
        if (stop) return;
        setModel(m);
        if (m.status === "queued" || m.status === "running") timer = setTimeout(() => tick(false), 700);
      } catch (e) {
        if (stop) return;
        if (e instanceof ApiError && (e.status === 404 || e.status === 401)) setMissing(e.status);
        else setError((e as Error).message);
      }
    };
    tick(true);
    return () => ((stop = true), clearTimeout(timer));
  }, [id, round]);
  const restart = useCallback((m: Model) => (setModel(m), setRound((r) => r + 1)), []);
  return { model, error, missing, restart };
}
