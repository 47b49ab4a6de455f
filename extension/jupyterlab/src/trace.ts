/**
 * A torch.profiler trace in the file browser opens as a torchtriage report: `*.pt.trace.json(.gz)` and
 * `*.json.gz` by default, any `*.json` through "Open With → torchtriage report".  The server analyses it
 * (`POST torchtriage/trace`, `torchtriage analyze` beside the trace, reused while the file is unchanged);
 * the widget shows the verdict and the hot lines, then the run's report.html in an iframe.  The trace's
 * contents never reach the browser (the documents' model factory loads no content: traces are often GBs).
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget, TextModelFactory } from '@jupyterlab/docregistry';
import { Contents, ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { el } from './dom';
import { LABELS, ms, pct } from './payload';
import { requestAPI } from './runs';

export const FACTORY = 'torchtriage report';
export const TRACE_FILE_TYPE = 'torchtriage-trace';
export const JSON_GZ_FILE_TYPE = 'torchtriage-json-gz';
const NO_CONTENT_MODEL = 'torchtriage-no-content';

/** What `POST torchtriage/trace` answers (server/torchtriage/jupyter/handlers.py, traces.py). */
export interface TraceReply {
  run: string;
  trace: string;
  reused: boolean;
  summary: {
    bottleneck: string | null;
    share: number | null;
    step_time_ms: number | null;
    steps_profiled: number | null;
    gpu_busy: number | null;
    hot_lines: { path: string; line: number | null; share: number | null; ms_per_step: number | null; category: string | null }[];
    warnings: string[];
  };
}

/** `compute bound 94% · 25.1 ms/step over 3 steps · GPU busy 41%` */
export function verdictLine(summary: TraceReply['summary']): string {
  const kind = summary.bottleneck ?? 'none';
  const verdict = kind === 'none' ? LABELS.none : `${LABELS[kind] ?? kind.replace(/_/g, ' ')} bound ${pct(summary.share ?? 0)}`;
  const step = summary.step_time_ms !== null ? ` · ${ms(summary.step_time_ms)}/step over ${summary.steps_profiled ?? '?'} steps` : '';
  const gpu = summary.gpu_busy !== null && summary.gpu_busy !== undefined ? ` · GPU busy ${pct(summary.gpu_busy)}` : '';
  return `${verdict}${step}${gpu}`;
}

/** A model factory that loads nothing: the widget needs the trace's path, never its (large) contents. */
class NoContentModelFactory extends TextModelFactory {
  get name(): string {
    return NO_CONTENT_MODEL;
  }

  get fileFormat(): Contents.FileFormat {
    return null;
  }
}

/** The analysed trace: a head (verdict, hot lines, run folder) over the run's report.html. */
export class TraceReport extends Widget {
  constructor(private readonly _context: DocumentRegistry.Context) {
    super();
    this.addClass('jp-torchtriage-trace');
    this._head = el('div', 'tt-trace-head', `Analysing ${_context.localPath} with torchtriage…`);
    this._frame = document.createElement('iframe');
    this._frame.className = 'tt-trace-report';
    this._frame.setAttribute('sandbox', 'allow-scripts allow-popups');
    this._frame.hidden = true;
    this.node.appendChild(this._head);
    this.node.appendChild(this._frame);
  }

  /** Asks the server for the analysis, then shows it (or the server's reason it cannot). */
  async load(): Promise<void> {
    await this._context.ready;
    const path = this._context.localPath;
    try {
      const reply = await requestAPI<TraceReply>('trace', { method: 'POST', body: JSON.stringify({ path }) });
      this._show(reply);
    } catch (error) {
      const message = error instanceof ServerConnection.ResponseError ? error.message : String(error);
      this._head.textContent = '';
      this._head.classList.add('tt-trace-error');
      this._head.appendChild(el('div', 'tt-trace-title', `torchtriage cannot analyse ${path}`));
      this._head.appendChild(el('pre', 'tt-trace-message', message));
    }
  }

  private _show(reply: TraceReply): void {
    this._head.textContent = '';
    this._head.appendChild(el('div', 'tt-trace-verdict', verdictLine(reply.summary)));
    const lines = reply.summary.hot_lines.filter(h => (h.share ?? 0) >= 0.01).slice(0, 3);
    if (lines.length) {
      const list = el('div', 'tt-trace-lines', 'Hot lines: ');
      list.textContent += lines
        .map(h => `${h.path}:${h.line ?? '?'} ${pct(h.share ?? 0)} (${LABELS[h.category ?? ''] ?? h.category ?? '?'})`)
        .join(' · ');
      this._head.appendChild(list);
    }
    for (const warning of reply.summary.warnings.slice(0, 2)) {
      this._head.appendChild(el('div', 'tt-trace-warning', warning));
    }
    this._head.appendChild(el('div', 'tt-trace-run', `${reply.reused ? 'Analysed before' : 'Analysed'}: ${reply.run}`));
    const html = URLExt.join(ServerConnection.makeSettings().baseUrl, 'torchtriage', 'html');
    this._frame.src = `${html}?path=${encodeURIComponent(reply.run)}`;
    this._frame.hidden = false;
  }

  private _head: HTMLElement;
  private _frame: HTMLIFrameElement;
}

class TraceReportFactory extends ABCWidgetFactory<DocumentWidget<TraceReport>> {
  protected createNewWidget(context: DocumentRegistry.Context): DocumentWidget<TraceReport> {
    const content = new TraceReport(context);
    const widget = new DocumentWidget({ content, context });
    // Not the label: a DocumentWidget renames its file when its title's label changes.
    widget.title.caption = `${context.localPath} — torchtriage report`;
    void content.load();
    return widget;
  }
}

/** The trace file types, the content-less model and the "torchtriage report" widget factory. */
export function registerTraceReports(registry: DocumentRegistry): void {
  registry.addModelFactory(new NoContentModelFactory());
  registry.addFileType({
    name: TRACE_FILE_TYPE,
    displayName: 'PyTorch profiler trace',
    extensions: ['.pt.trace.json', '.pt.trace.json.gz'],
    mimeTypes: ['application/json'],
    contentType: 'file',
    fileFormat: null
  });
  registry.addFileType({
    name: JSON_GZ_FILE_TYPE,
    displayName: 'Compressed JSON (a chrome trace?)',
    extensions: ['.json.gz'],
    contentType: 'file',
    fileFormat: null
  });
  registry.addWidgetFactory(
    new TraceReportFactory({
      name: FACTORY,
      label: 'torchtriage report',
      modelName: NO_CONTENT_MODEL,
      fileTypes: [TRACE_FILE_TYPE, JSON_GZ_FILE_TYPE, 'json'],
      defaultFor: [TRACE_FILE_TYPE, JSON_GZ_FILE_TYPE],
      readOnly: true
    })
  );
}
