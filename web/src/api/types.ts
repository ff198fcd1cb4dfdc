// The server's JSON, mirrored in one place (docs/api.md, docs/option-table.md).
// Keep field names exactly as the server writes them.

/** Error body of every 4xx/5xx response. */
export interface ApiErrorBody {
  error: string;
  code: string;
}

export type ModelStatus = "queued" | "running" | "ready" | "failed";
export type StageName = "parse" | "compile" | "profile" | "simulate" | "store" | "done";
export type StageStatus = "done" | "running" | "pending" | "failed";

export interface Stage {
  name: StageName | string;
  status: StageStatus;
  seconds: number | null;
  /** Why a stage of its own is there, e.g. "calibrate": "Calibrating this machine, once (a few minutes…)…". */
  note?: string;
}

export interface TargetSummary {
  target: string;
  latency_ms: number;
  latency_p90_ms: number;
  /** measured targets: the median wall time (latency_ms is the model's own time, CPU time on a busy machine) */
  wall_latency_ms?: number | null;
  peak_memory_bytes: number;
  measured: boolean;
  label: string;
  noise?: Noise | null;
  work_unknown?: WorkUnknown | null;
}

/** A profile's steadiness: spread is p90 / median of the timed runs; a noisy one says why (other load, ...). */
export interface Noise {
  noisy: boolean;
  spread: number | null;
  cpu_share?: number | null;
  load_per_cpu?: number | null;
  cpu_latency_ms?: number | null;
  rounds?: number | null;
  reason?: string | null;
  /** the CPU's speed (GFLOP/s of a 1-thread MatMul) before / after the timed runs and in the host calibration; ratio
   * is this profile's over the calibration's (compiler/speed_probe.py) */
  speed?: SpeedProbe | null;
}

export interface SpeedProbe {
  before_gflops: number;
  after_gflops: number;
  reference_gflops: number | null;
  ratio: number | null;
  drifted: boolean;
}

export interface ModelSummary {
  source_op_count: number;
  task_count: number;
  weight_bytes: number;
  inputs: Record<string, number[]>;
  targets: TargetSummary[];
}

export interface Model {
  id: string;
  url: string;
  name: string;
  format: string;
  size_bytes: number;
  created_at: string;
  status: ModelStatus;
  stage: StageName;
  progress: number;
  error: string | null;
  stages: Stage[];
  targets: string[];
  summary: ModelSummary | null;
  /** the account that uploaded it (null for models from before accounts) */
  owner?: { id: string; name: string } | null;
  /** the caller's role; null in the "shared" list */
  your_role?: Role | null;
  link_sharing?: boolean;
  /** input shapes and values set for the analysis (upload form, `--input`, re-analysis); {} for the defaults */
  input_shapes?: Record<string, number[]>;
  input_values?: Record<string, number>;
  /** every input as the server read and planned it (at the parse stage, so failed models have it too) */
  inputs?: InputRecord[] | null;
}

/** One model input: declared shape (symbolic dims by name), the concrete shape and value the analysis used, and
 * who set them. */
export interface InputRecord {
  name: string;
  dtype: string;
  declared: (number | string | null)[] | null;
  shape: number[] | null;
  value?: number | null;
  role?: string | null;
  /** free dims that took a default size: dim -> size */
  defaulted?: Record<string, number> | null;
  set_by?: "user" | "default" | "model" | null;
  range?: [number, number] | null;
  note?: string | null;
}

/** Tasks whose work (MACs, bytes) could not be resolved, and their time. */
export interface WorkUnknown {
  tasks: number;
  latency_ms: number;
  share: number;
}

export interface ModelList {
  models: Model[];
}

export interface TensorInfo {
  name: string;
  shape: number[];
  dtype: string;
}

/** One compiled task (a row of the table). */
export interface Op {
  id: string;
  index: number;
  name: string;
  type: string;
  namespace: string;
  latency_ms: number;
  p25_ms: number;
  p75_ms: number;
  share: number;
  measured: boolean;
  macs: number;
  weight_bytes: number;
  activation_bytes: number;
  source_nodes: string[];
  /** where in the user's code the task comes from (.pt2 with sources; [] otherwise) */
  locations?: SourceLocation[];
  inputs: TensorInfo[];
  outputs: TensorInfo[];
  /** the task's work (MACs, bytes) could not be resolved at the shapes used: its predictions are unreliable */
  work_unknown?: boolean;
  /** runs per inference: a Loop body's trip count, 0 for a branch not taken (latency_ms covers all of them) */
  executions?: number;
  /** id of the If / Loop / Scan task whose body holds this task, and which body ("" at the top level) */
  parent?: string;
  branch?: string;
}

export interface SourceLocation {
  file: string;
  line: number;
  code: string;
}

export interface SourceFiles {
  files: { path: string; bytes: number }[];
}

export interface SourceFile {
  path: string;
  text: string;
}

export interface OpsResponse {
  target: string;
  measured: boolean;
  label: string;
  latency_ms: number;
  /** whole-model p90 of un-profiled runs (measured targets) */
  latency_p90_ms?: number | null;
  /** measured peak memory of the unoptimized model (rise in resident memory) */
  peak_memory_bytes?: number | null;
  /** tasks marked work_unknown and their share of the time */
  work_unknown?: WorkUnknown | null;
  /** how steady the measurement was (null: predicted target, or an old profile) */
  noise?: Noise | null;
  ops: Op[];
}

export interface GraphNode {
  id: string;
  name: string;
  type: string;
  namespace: string;
  source_nodes: string[];
}

export interface GraphEdge {
  src: string;
  dst: string;
  value: string;
  shape: number[];
  dtype: string;
}

/** GET /graph?format=columns: the graph as the graph view needs it, column by column (a third of the JSON of
 * GraphResponse and no object per node to parse). src/dst index the node columns. */
export interface GraphColumns {
  view: "compiled" | "source";
  ids: string[];
  names: string[];
  types: string[];
  namespaces: string[];
  src: number[];
  dst: number[];
}

export interface GraphResponse {
  view: "compiled" | "source";
  nodes: GraphNode[];
  edges: GraphEdge[];
  inputs: string[];
  outputs: string[];
}

// ---- option table (docs/option-table.md, schema 1) ----

export type Format = "fp32" | "fp16" | "int8" | "int4" | "lut1" | "lut2" | "lut4" | "lut6" | "lut8" | "-";

export interface Preset {
  name: string;
  input: string;
  output: string;
  kernel: string;
  sparsity: number;
  description: string;
}

export interface OptionLabel {
  kind: "predicted" | "measured";
  profile: string;
  /** host efficiencies come from `edgescope calibrate` */
  calibrated?: boolean;
  /** median whole-model error on held-out models; null if not measured yet */
  error_pct_median: number | null;
  error_models: number | null;
  /** "measured" when fp32 cells of ops running the fp32 kernel are measured medians */
  baseline?: "measured" | "predicted";
  measured_runtime?: string;
  /** the server's one-sentence label; shown as is when present */
  text?: string;
}

export interface OptionMetrics {
  latency_ms: number[][];
  weight_bytes: number[][];
  activation_bytes: number[][];
  dram_bytes: number[][];
}

export interface OptionTable {
  schema: 1;
  target: string;
  label: OptionLabel;
  ops: string[];
  presets: Preset[];
  metrics: OptionMetrics;
  supported: boolean[][];
  combos: string[][];
  /** compute unit per op and preset (cpu, ane, gpu, htp, xnnpack) */
  units?: string[][];
  /** the target's units in placement order; the last is the CPU / CPU-EP fallback */
  unit_names?: string[];
  edges: { src: number[]; dst: number[]; elements: number[] };
  conversion: { fixed_ms: number; ms_per_element: Record<string, number> };
  /** partition-crossing figures; null / absent: one unit (or a table from before per-op units) */
  crossing?: Crossing | null;
  constants: {
    dram_pj_per_byte: number;
    size_overhead_bytes: number;
    /** the totals rule's per-inference term: the runtime's fixed cost per inference and, measured, the whole
     * model's time outside its tasks; in no op's latency (schema 2; the server upgrades tables stored before) */
    per_inference_ms?: number;
    /** the totals rule's float-graph terms, {unit: ms}: a unit's fixed cost per run of a graph that computes float
     * on it, paid in a state where an op runs there with float activations in and out; absent: none */
    float_graph_ms?: Record<string, number>;
    /** copies of the weights the runtime holds beside the file's (LiteRT: XNNPACK's packed buffers); absent: 0 */
    weight_copies?: number;
    /** bytes of constants the upload makes at run time (ConstantOfShape weights): in peak memory, not size; absent: 0 */
    made_at_run_time_bytes?: number;
    /** peak memory: the runtime's own resident memory once it has run (ORT CPU: its libraries' pages); absent: 0 */
    runtime_bytes?: number;
    /** peak memory: the runtime's own memory while it loads the model (ORT CPU: library pages read at load); the
     * load's peak (this and the load copies) and the run's (runtime_bytes and the arena) do not add up; absent: 0 */
    load_runtime_bytes?: number;
    /** peak memory: the arena is this times an op's activations plus its int8 scratch, at the op where that is
     * largest; absent: 1 */
    arena_factor?: number;
    /** peak memory: copies of the largest op's weights made while the runtime loads them; absent: 0 */
    load_copies?: number;
    /** kernel formats the runtime decodes at load to preset `preset`'s weights (ORT CPU: fp16, palettized, to
     * fp32); absent: none */
    decoded_at_load?: { kernels: string[]; preset: string };
    /** peak memory: ops (indices) whose weights the runtime packs at load when their kernel format is one of
     * `prepacked_kernels`; the peak grows by `prepack_share` of them (ORT CPU: MLAS's MatMul / Gemm B) */
    prepacked_ops?: number[];
    prepacked_kernels?: string[];
    /** ops (indices) whose weights the runtime packs at load when their combo runs an int8 kernel on int8
     * activations (ORT CPU: QLinearConv) */
    prepacked_int8_ops?: number[];
    prepack_share?: number;
    /** the share for the packed weights of int8 kernels (ORT CPU: padded packed copies beside the originals);
     * absent: prepack_share */
    prepack_share_int8?: number;
    /** [op, bytes, bytes]: scratch an op's int8 kernel works in beside its activations, with int8 activations in
     * (int8-static) and with float ones (int8-dynamic); in its working set when its combo's kernel is int8 */
    int8_scratch?: [number, number, number][];
    /** [op, bytes]: the most of a recurrent op's activation figure (every step's traffic) the peak counts: its
     * tensors in and out at fp32 */
    activation_caps?: [number, number][];
  };
  base: { preset: string; latency_ms: number; peak_memory_bytes: number; memory_power_mw: number; size_bytes: number; fps?: number };
  /** per preset: can the exporter write it for this model (absent: all exportable), and why not */
  exportable?: boolean[];
  export_reasons?: (string | null)[];
  /** which exporter builds files for this target (null: none for this model and target) */
  exporter?: string | null;
}

/** One crossing between compute units costs `(fixed_s + bytes / bytes_per_s) * 1e3` ms (docs/option-table.md). */
export interface Crossing {
  fixed_s: number;
  bytes_per_s: number;
}

/** `GET /api/models/<id>/ops/<op>/options`: every combo of one op. */
export interface OpOptions {
  op: string;
  combos: string[];
  supported: boolean[];
  /** what combo k actually runs as (differs where supported[k] is false) */
  resolved?: string[];
  latency_ms: number[];
  weight_bytes: number[];
  activation_bytes: number[];
  dram_bytes: number[];
  /** unit that runs combo k, as an index into the bulk table's `unit_names` (absent in older tables) */
  unit?: number[];
  /** false where the exporter cannot write combo k for this model (absent: all exportable) */
  exportable?: boolean[];
  notes: string[];
}

/** What the browser keeps and a saved analysis stores. */
export interface AnalysisState {
  target: string;
  model_wide: string;
  overrides: Record<string, string>;
}

// ---- diffs (server/api/diffs.py, docs/api.md "Diffs") ----

export type DiffTotals = Record<"latency_ms" | "peak_memory_bytes" | "memory_power_mw" | "size_bytes" | "fps", number>;

/** One change between two states: the model-wide option (op null) or one op's override (null: follows the model-wide). */
export interface StateChange {
  kind: "model_wide" | "override";
  op: string | null;
  before: string | null;
  after: string | null;
  /** totals with this change alone applied to the `before` state, minus `before`; null past the evaluated ones */
  alone: DiffTotals | null;
}

/** `GET /api/models/<id>/analyses/<aid>/diff?against=` */
export interface AnalysisDiff {
  target: string;
  analysis: { id: string; name: string };
  against: { id: string | null; name: string };
  before_state: { model_wide: string; overrides: Record<string, string> };
  after_state: { model_wide: string; overrides: Record<string, string> };
  before: DiffTotals;
  after: DiffTotals;
  delta: DiffTotals;
  changes: StateChange[];
  evaluated: number;
}

export type MatchHow = "name" | "structure" | "order" | "added" | "removed";

/** One matched (or unmatched) op of a model diff; figures are [a, b], null on the side it is missing from. */
export interface ModelDiffRow {
  a: string | null;
  b: string | null;
  how: MatchHow;
  name: string;
  type: string;
  namespace: string;
  /** a's name where it differs from b's */
  a_name?: string;
  latency_ms: [number | null, number | null];
  macs: [number | null, number | null];
  weight_bytes: [number | null, number | null];
  activation_bytes: [number | null, number | null];
}

/** `GET /api/models/<id>/diff?other=&target=`: a = this model, b = the other; delta = b - a. */
export interface ModelDiff {
  target: string;
  a: { id: string; name: string };
  b: { id: string; name: string };
  measured: { a: boolean; b: boolean };
  counts: Record<MatchHow, number>;
  /** `measured` (peak memory only): whether each model's figure was measured here (else predicted) */
  totals: Record<"latency_ms" | "macs" | "weight_bytes" | "activation_bytes" | "tasks" | "peak_memory_bytes", { a: number | null; b: number | null; delta: number | null; measured?: (boolean | null)[] }>;
  ops: ModelDiffRow[];
}

// ---- accounts (server/api/auth.py) ----

export interface User {
  id: string;
  email: string;
  name: string;
  is_admin: boolean;
}

/** `GET /api/auth/me`, and the body of `POST /api/auth/login` / `signup` (with a session cookie). */
export interface Me {
  user: User;
  csrf_token: string;
  allow_signup?: boolean;
}

// ---- sharing and saved analyses (server/api/sharing.py, server/api/analyses.py) ----

export type Role = "owner" | "editor" | "viewer";

export interface Person {
  id: string;
  email: string;
  name: string;
}

export interface Share {
  id: string;
  role: "viewer" | "editor";
  with: { kind: "user"; id: string; email: string; name: string } | { kind: "group"; id: string; name: string };
  created_at: string;
}

/** `GET /api/models/<id>/shares` */
export interface SharesResponse {
  link_sharing: boolean;
  your_role: Role;
  owner: Person | null;
  shares: Share[];
}

export interface Group {
  id: string;
  name: string;
  members: (Person & { role: "admin" | "member" })[];
}

export interface Analysis {
  id: string;
  model_id: string;
  name: string;
  state: AnalysisState;
  notes: string;
  version: number;
  parent_id: string | null;
  owner: Person;
  created_at: string;
  updated_at: string;
  can_edit: boolean;
  url: string;
}

export interface AnalysisTree extends Analysis {
  forks: AnalysisTree[];
}

/** `GET .../analyses/<id>/lineage`: parents nearest first, and the fork tree below the analysis. */
export interface Lineage {
  parents: Analysis[];
  analysis: AnalysisTree;
}

/** A personal API token (server/api/auth.py); `token` only in the answer that created it. */
export interface ApiToken {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked: boolean;
  token?: string;
}

// ---- exports (server/api/exports.py) ----

export interface ExportFigures {
  latency_ms?: number | null;
  latency_p90_ms?: number | null;
  size_bytes?: number | null;
  peak_memory_bytes?: number | null;
  memory_power_mw?: number | null;
  label?: string;
  /** measured only: the timing's noise record (runs spread, other load, the CPU's speed against its calibration's) */
  noise?: { noisy?: boolean; reason?: string } | null;
}

/** An optimized model file built from a state, with its prediction beside what was measured here. */
export interface ExportRecord {
  id: string;
  model_id: string;
  state: AnalysisState;
  status: "queued" | "running" | "ready" | "failed";
  error: string | null;
  filename: string | null;
  size_bytes: number | null;
  predicted: ExportFigures | null;
  /** null where the target does not run on this server */
  measured: ExportFigures | null;
  notes: string[];
  created_at: string;
  finished_at: string | null;
  download_url: string | null;
  /** the saved analysis the export was made from, if any */
  analysis_id?: string | null;
  /** what the worker is doing now, and how far (when the server reports it) */
  stage?: string | null;
  progress?: number | null;
}
