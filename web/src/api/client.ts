// Typed client for docs/api.md. Every call returns the types of ./types.ts or throws ApiError.
import type { Me, Model, ModelList, OpOptions, OpsResponse, OptionTable, SourceFile, SourceFiles } from "./types";
import type { AnalysisDiff, ModelDiff } from "./types";
import type { Analysis, AnalysisState, ApiToken, ExportRecord, Group, Lineage, Share, SharesResponse } from "./types";

// Cookie sessions need the CSRF token on every state-changing request (server/auth.py).
let csrfToken = "";
const unsafeHeaders = (): Record<string, string> => (csrfToken ? { "X-CSRF-Token": csrfToken } : {});

export async function postJson<T>(url: string, body: unknown): Promise<T> {
  const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json", ...unsafeHeaders() }, body: JSON.stringify(body) });
  if (!r.ok) throw await toError(r);
  return (await r.json()) as T;
}

export class ApiError extends Error {
  constructor(message: string, readonly status: number, readonly code: string) {
    super(message);
  }
}

async function toError(r: Response): Promise<ApiError> {
  let msg = `${r.status} ${r.statusText}`;
  let code = "http_error";
  try {
    const body = await r.json();
    if (body && typeof body.error === "string") {
      msg = body.error;
      code = body.code ?? code;
    }
  } catch {
    /* not JSON */
  }
  return new ApiError(msg, r.status, code);
}

/** The JSON body of a response, or its ApiError. */
export async function readJson<T>(response: Promise<Response>): Promise<T> {
  const r = await response;
  if (!r.ok) throw await toError(r);
  return (await r.json()) as T;
}

const get = <T,>(url: string, signal?: AbortSignal): Promise<T> => readJson<T>(fetch(url, { signal, headers: { Accept: "application/json" } }));

/** The body of a response unparsed (a JSON document the graph's worker parses), or its ApiError. */
export async function readBytes(response: Promise<Response>): Promise<ArrayBuffer> {
  const r = await response;
  if (!r.ok) throw await toError(r);
  return r.arrayBuffer();
}

const q = (target?: string) => (target ? `?target=${encodeURIComponent(target)}` : "");
const m = (id: string) => `/api/models/${encodeURIComponent(id)}`;

export const auth = {
  /** `early`: the same request already sent (by index.html); a network failure of it is retried here. */
  async me(early?: Promise<Response>): Promise<Me | null> {
    const fresh = () => fetch("/api/auth/me", { headers: { Accept: "application/json" } });
    const r = await (early ? early.catch(fresh) : fresh());
    if (r.status === 401) return null;
    if (!r.ok) throw await toError(r);
    const me = (await r.json()) as Me;
    csrfToken = me.csrf_token;
    return me;
  },
  async login(email: string, password: string): Promise<Me> {
    const me = await postJson<Me>("/api/auth/login", { email, password });
    csrfToken = me.csrf_token;
    return me;
  },
  async signup(email: string, password: string, name: string): Promise<Me> {
    const me = await postJson<Me>("/api/auth/signup", { email, password, name });
    csrfToken = me.csrf_token;
    return me;
  },
  async logout(): Promise<void> {
    await fetch("/api/auth/logout", { method: "POST", headers: unsafeHeaders() });
    csrfToken = "";
  },
};

export const api = {
  listModels: (signal?: AbortSignal, scope: "mine" | "shared" = "mine") => get<ModelList>(`/api/models?scope=${scope}`, signal),
  getModel: (id: string, signal?: AbortSignal) => get<Model>(m(id), signal),
  ops: (id: string, target?: string, signal?: AbortSignal) => get<OpsResponse>(`${m(id)}/ops${q(target)}`, signal),
  /** The compiled graph's node columns (GraphColumns) as bytes, for the graph's worker to parse (GraphView). */
  graphBytes: (id: string, signal?: AbortSignal) =>
    readBytes(fetch(`${m(id)}/graph?view=compiled&format=columns`, { signal, headers: { Accept: "application/json" } })),
  options: (id: string, target?: string, signal?: AbortSignal) => get<OptionTable>(`${m(id)}/options${q(target)}`, signal),
  /** /ops and /options of a target as JSON text, to parse when the page is ready for it (the text is decoded as
   * it downloads, as Response.json() does) */
  tableText: (id: string, target: string, signal?: AbortSignal) =>
    ["ops", "options"].map(async (ep) => {
      const r = await fetch(`${m(id)}/${ep}${q(target)}`, { signal, headers: { Accept: "application/json" } });
      if (!r.ok) throw await toError(r);
      return r.text();
    }),
  opOptions: (id: string, op: string, target?: string, signal?: AbortSignal) =>
    get<OpOptions>(`${m(id)}/ops/${encodeURIComponent(op)}/options${q(target)}`, signal),
  sources: (id: string, signal?: AbortSignal) => get<SourceFiles>(`${m(id)}/sources`, signal),
  source: (id: string, path: string, signal?: AbortSignal) =>
    get<SourceFile>(`${m(id)}/sources/${path.split("/").map(encodeURIComponent).join("/")}`, signal),
  async deleteModel(id: string): Promise<void> {
    const r = await fetch(m(id), { method: "DELETE", headers: unsafeHeaders() });
    if (!r.ok && r.status !== 204) throw await toError(r);
  },
  /** Queue a fresh analysis, with other input shapes and values (editor rights). */
  reanalyze: (id: string, body: { inputs: Record<string, number[]>; input_values: Record<string, number> }) => postJson<Model>(`${m(id)}/reanalyze`, body),
  /** Multipart upload with byte progress (XHR: fetch has no upload progress). `fields`: inputs, input_values.
   * `data`: the model's external data files (`model.onnx.data`), each sent as a `data` part under its own name. */
  upload(file: File, onProgress?: (fraction: number) => void, fields: { inputs?: Record<string, number[]>; input_values?: Record<string, number> } = {}, data: File[] = []): Promise<Model> {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/api/models");
      for (const [k, v] of Object.entries(unsafeHeaders())) xhr.setRequestHeader(k, v);
      xhr.responseType = "text";
      xhr.upload.onprogress = (e) => e.lengthComputable && onProgress?.(e.loaded / e.total);
      xhr.onerror = () => reject(new ApiError("Network error while uploading.", 0, "network"));
      xhr.onload = () => {
        let body: unknown = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch {
          /* ignore */
        }
        if (xhr.status >= 200 && xhr.status < 300) resolve(body as Model);
        else {
          const b = body as { error?: string; code?: string } | null;
          reject(new ApiError(b?.error ?? `Upload failed (${xhr.status}).`, xhr.status, b?.code ?? "http_error"));
        }
      };
      const fd = new FormData();
      fd.append("file", file, file.name);
      for (const d of data) fd.append("data", d, d.name);
      for (const [k, v] of Object.entries(fields)) if (v && Object.keys(v).length) fd.append(k, JSON.stringify(v));
      xhr.send(fd);
    });
  },
};

// ---- sharing and saved analyses ----

async function send<T>(method: string, url: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", ...unsafeHeaders() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!r.ok) throw await toError(r);
  return (r.status === 204 ? undefined : await r.json()) as T;
}

const an = (id: string, aid?: string) => `${m(id)}/analyses${aid ? `/${encodeURIComponent(aid)}` : ""}`;

export const collab = {
  shares: (id: string, signal?: AbortSignal) => get<SharesResponse>(`${m(id)}/shares`, signal),
  share: (id: string, who: { email: string } | { group_id: string }, role: "viewer" | "editor") =>
    send<Share>("POST", `${m(id)}/shares`, { ...who, role }),
  revoke: (id: string, shareId: string) => send<void>("DELETE", `${m(id)}/shares/${encodeURIComponent(shareId)}`),
  setLink: (id: string, enabled: boolean) => send<{ link_sharing: boolean }>("PUT", `${m(id)}/link`, { enabled }),
  groups: (signal?: AbortSignal) => get<{ groups: Group[] }>("/api/groups", signal),
  createGroup: (name: string) => send<Group>("POST", "/api/groups", { name }),
  addMember: (groupId: string, email: string) => send<Group>("POST", `/api/groups/${encodeURIComponent(groupId)}/members`, { email }),
  setMemberRole: (groupId: string, userId: string, role: "admin" | "member") =>
    send<Group>("PATCH", `/api/groups/${encodeURIComponent(groupId)}/members/${encodeURIComponent(userId)}`, { role }),
  removeMember: (groupId: string, userId: string) =>
    send<void>("DELETE", `/api/groups/${encodeURIComponent(groupId)}/members/${encodeURIComponent(userId)}`),
  tokens: (signal?: AbortSignal) => get<{ tokens: ApiToken[] }>("/api/tokens", signal),
  createToken: (name: string) => send<ApiToken>("POST", "/api/tokens", { name }),
  revokeToken: (tokenId: string) => send<void>("DELETE", `/api/tokens/${encodeURIComponent(tokenId)}`),
  analyses: (id: string, signal?: AbortSignal) => get<{ analyses: Analysis[] }>(an(id), signal),
  analysis: (id: string, aid: string, signal?: AbortSignal) => get<Analysis>(an(id, aid), signal),
  createAnalysis: (id: string, body: { name: string; notes: string; state: AnalysisState }) => send<Analysis>("POST", an(id), body),
  saveAnalysis: (id: string, aid: string, body: { version: number; name?: string; notes?: string; state?: AnalysisState }) =>
    send<Analysis>("PUT", an(id, aid), body),
  fork: (id: string, aid: string, body: { name?: string; notes?: string; state?: AnalysisState } = {}) =>
    send<Analysis>("POST", `${an(id, aid)}/fork`, body),
  deleteAnalysis: (id: string, aid: string) => send<void>("DELETE", an(id, aid)),
  lineage: (id: string, aid: string, signal?: AbortSignal) => get<Lineage>(`${an(id, aid)}/lineage`, signal),
};

// ---- diffs ----

export const diffsApi = {
  /** `against`: an analysis id, or "base" (the unoptimized model); omitted: its parent */
  analysis: (id: string, aid: string, against?: string, signal?: AbortSignal) =>
    get<AnalysisDiff>(`${an(id, aid)}/diff${against ? `?against=${encodeURIComponent(against)}` : ""}`, signal),
  model: (id: string, other: string, target?: string, signal?: AbortSignal) =>
    get<ModelDiff>(`${m(id)}/diff?other=${encodeURIComponent(other)}${target ? `&target=${encodeURIComponent(target)}` : ""}`, signal),
};

// ---- exports of optimized models ----

export const exportsApi = {
  list: (id: string, signal?: AbortSignal) => get<{ exports: ExportRecord[] }>(`${m(id)}/exports`, signal),
  get: (id: string, exportId: string, signal?: AbortSignal) => get<ExportRecord>(`${m(id)}/exports/${encodeURIComponent(exportId)}`, signal),
  create: (id: string, state: AnalysisState, analysisId: string | null) =>
    send<ExportRecord>("POST", `${m(id)}/exports`, analysisId ? { state, analysis_id: analysisId } : { state }),
};
