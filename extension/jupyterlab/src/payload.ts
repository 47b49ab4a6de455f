/** The application/vnd.torchtriage.profile+json payload (torchtriage/jupyter/display.py). */
export const MIME_TYPE = 'application/vnd.torchtriage.profile+json';

export interface Hotspot {
  path: string;
  line: number;
  function: string;
  source: string;
  self_ms_per_step: number;
  share: number;
  category: string;
  top_names: string[];
  detail: string;
  static_codes: string[];
}

export interface Verdict {
  kind: string;
  share: number;
  evidence: { text: string; path?: string | null; line?: number | null }[];
  recommendations: { action: string; why: string; example: string }[];
}

export interface Report {
  step_time_ms: number;
  steps_profiled: number;
  step_detection: string;
  breakdown: Record<string, number>;
  breakdown_ms: Record<string, number>;
  bottleneck: Verdict;
  hotspots: Hotspot[];
  status: { status: string; message: string };
}

export interface Payload {
  version: number;
  report: Report | null;
  status: { status: string; message: string };
  notebook: {
    execution_count: number;
    cell_path: string;
    first_line: number;
    cells: { path: string; execution_count: number }[];
  };
  run_dir: string;
}

export const LABELS: Record<string, string> = {
  data_loading: 'data loading',
  host_sync: 'host-device sync',
  python_overhead: 'Python overhead',
  launch_overhead: 'launch overhead',
  compute: 'compute',
  optimizer: 'optimizer',
  communication: 'communication',
  idle: 'idle',
  memory_growth: 'memory growth',
  none: 'no clear bottleneck'
};

export function pct(share: number): string {
  return `${Math.round(share * 100)}%`;
}

export function ms(value: number): string {
  return value >= 10 ? `${Math.round(value)} ms` : `${value.toFixed(1)} ms`;
}

/** The hot lines of the profiled cell itself, in the cell's own line numbers. */
export function cellHotspots(payload: Payload, limit = 5): Hotspot[] {
  const report = payload.report;
  if (!report) {
    return [];
  }
  return report.hotspots.filter(h => h.path === payload.notebook.cell_path && h.share >= 0.01).slice(0, limit);
}

/** "In [3]" for a hot line in an earlier cell, or the file name. */
export function where(payload: Payload, spot: Hotspot): string {
  const cell = payload.notebook.cells.find(c => c.path === spot.path);
  if (cell) {
    return `In [${cell.execution_count}] line ${spot.line}`;
  }
  return `${spot.path.split('/').pop()}:${spot.line}`;
}
