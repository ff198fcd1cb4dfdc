import { useEffect, useState } from "react";

export type Route = { page: "list" } | { page: "account" } | { page: "model"; id: string; analysis: string | null } | { page: "missing" };

// The server serves the app shell at /, /account, /m/<id> and /m/<id>/a/<id>; /?page=account still works.
export const ACCOUNT_URL = "/account";

export function parseRoute(path: string, search = ""): Route {
  if (path === "/account" || path === "/account/") return { page: "account" };
  if ((path === "/" || path === "") && new URLSearchParams(search).get("page") === "account") return { page: "account" };
  if (path === "/" || path === "") return { page: "list" };
  const m = /^\/m\/([^/]+)(?:\/a\/([^/]+))?\/?$/.exec(path);
  if (m) return { page: "model", id: decodeURIComponent(m[1]), analysis: m[2] ? decodeURIComponent(m[2]) : null };
  return { page: "missing" };
}

/** The link the share dialog hands out: the open analysis's page when one is open (a link to the model alone
 *  would show the recipient the unoptimized model, not the saved state being shared). */
export function shareLink(origin: string, modelId: string, analysisId?: string | null): string {
  const m = `${origin}/m/${encodeURIComponent(modelId)}`;
  return analysisId ? `${m}/a/${encodeURIComponent(analysisId)}` : m;
}

export function navigate(path: string): void {
  history.pushState(null, "", path);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname, location.search));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.pathname, location.search));
    window.addEventListener("popstate", on);
    return () => window.removeEventListener("popstate", on);
  }, []);
  return route;
}
