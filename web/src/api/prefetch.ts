// The model page's first requests, started before the app's code runs: index.html's inline script sends them as
// the page loads. Otherwise they wait for the bundle, the sign-in check, the model and the page's render: a
// waterfall of 250 ms or more before a big model's graph (12 MB at 50,000 tasks) even starts to download.
import type { Model } from "./types";
import { readBytes, readJson } from "./client";

declare global {
  interface Window {
    __edgescopeEarly?: { path: string; me: Promise<Response>; model: Promise<Response>; graph: Promise<Response> };
  }
}

const early = new Map<string, Promise<unknown>>();

function keep(key: string, p: Promise<unknown>): void {
  p.catch(() => undefined); // a failed early request is made again by takeEarly's caller, not reported
  early.set(key, p);
}

let earlyMe: Promise<Response> | undefined;

/** Take over index.html's requests for the model page `id` (if that is the page it was loaded for). */
export function adoptEarlyRequests(id: string): void {
  const e = window.__edgescopeEarly;
  window.__edgescopeEarly = undefined;
  if (!e || decodeURIComponent(e.path) !== id) return;
  earlyMe = e.me;
  keep(`model:${id}`, readJson<Model>(e.model));
  // 204: the model was not ready when the page loaded; the page asks again once it is
  keep(`graph:${id}`, e.graph.then((r) => (r.status === 204 ? Promise.reject(new Error("not ready")) : readBytes(Promise.resolve(r)))));
}

/** index.html's /api/auth/me request (once), if it sent one. */
export function takeEarlyMe(): Promise<Response> | undefined {
  const r = earlyMe;
  earlyMe = undefined;
  return r;
}

/**
 * The early request for `key` if there was one (once), else `make()`. An early request that failed (signed out,
 * model not ready yet) is made again by `make`, so its error is never the page's.
 */
export function takeEarly<T>(key: string, make: () => Promise<T>): Promise<T> {
  const p = early.get(key) as Promise<T> | undefined;
  early.delete(key);
  return p ? p.catch(make) : make();
}
