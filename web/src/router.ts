import { useEffect, useState } from "react";

export type Route = { page: "list" } | { page: "model"; id: string; analysis: string | null } | { page: "missing" };

export function parseRoute(path: string): Route {
  if (path === "/" || path === "") return { page: "list" };
  const m = /^\/m\/([^/]+)(?:\/a\/([^/]+))?\/?$/.exec(path);
  if (m) return { page: "model", id: decodeURIComponent(m[1]), analysis: m[2] ? decodeURIComponent(m[2]) : null };
  return { page: "missing" };
}

export function navigate(path: string): void {
  history.pushState(null, "", path);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.pathname));
    window.addEventListener("popstate", on);
    return () => window.removeEventListener("popstate", on);
  }, []);
  return route;
}
