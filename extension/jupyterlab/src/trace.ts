/**
 * A torch.profiler trace in the file browser opens as a torchtriage report: `*.pt.trace.json(.gz)` and
 * `*.json.gz` by default, any `*.json` through "Open With → torchtriage report".  The server analyses it
 * (`POST torchtriage/trace`, `torchtriage analyze` beside the trace, reused while the file is unchanged);
 * the widget shows the verdict and the hot lines, then the run's report.html in an iframe.  The trace's
 * contents never reach the browser (the documents' model factory loads no content: traces are often GBs).
 * A folder of traces (a `tensorboard_trace_handler` logdir, per-rank traces) opens the same way from the file
 * browser's context menu ("Open as torchtriage trace report"): the first rank's report, and a line naming the
 * ranks analysed, each a link to that rank's own report.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { URLExt } from '@jupyterlab/coreutils';
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget, TextModelFactory } from '@jupyterlab/docregistry';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { Contents, ServerConnection } from '@jupyterlab/services';
import { folderIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { el } from './dom';
import { LABELS, ms, pct } from './payload';
import { requestAPI } from './runs';

export const FACTORY = 'torchtriage report';
export const OPEN_FOLDER_COMMAND = 'torchtriage:open-trace-folder';
export const TRACE_FILE_TYPE = 'torchtriage-trace';
export const JSON_GZ_FILE_TYPE = 'torchtriage-json-gz';
const NO_CONTENT_MODEL = 'torchtriage-no-content';

/** What `POST torchtriage/trace` answers (server/torchtriage/jupyter/handlers.py, traces.py). */
export interface TraceReply {
  run: string;
  trace: string;
  folder: boolean;
  reused: boolean;
  /** A folder's workers, each with its own run folder (its rank when the folder is one job); [] for a file. */
  workers: { name: string; rank: number | null; run: string }[];
  summary: {
    bottleneck: string | null;
    share: number | null;
    step_time_ms: number | null;
    steps_profiled: number | null;
    gpu_busy: number | null;
    hot_lines: { path: string; line: number | null; share: number | null; ms_per_step: number | null; category: string | null }[];
    warnings: string[];
    ranks: number[];
    shown_rank: number | null;
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

/** The URL of a run's report.html (`torchtriage/html`). */
function reportUrl(run: string): string {
  const html = URLExt.join(ServerConnection.makeSettings().baseUrl, 'torchtriage', 'html');
  return `${html}?path=${encodeURIComponent(run)}`;
}

/** The analysed trace (a file or a folder): a head (verdict, hot lines, ranks, run folder) over the run's report.html. */
export class TraceReport extends Widget {
  /** `path`: the trace or folder, relative to the server root; `ready`: resolves when the path can be asked about. */
  constructor(
    private readonly _path: string,
    private readonly _ready: Promise<void> = Promise.resolve()
  ) {
    super();
    this.addClass('jp-torchtriage-trace');
    this._head = el('div', 'tt-trace-head', `Analysing ${_path} with torchtriage…`);
    this._frame = document.createElement('iframe');
    this._frame.className = 'tt-trace-report';
    this._frame.setAttribute('sandbox', 'allow-scripts allow-popups');
    this._frame.hidden = true;
    this.node.appendChild(this._head);
    this.node.appendChild(this._frame);
  }

  /** Asks the server for the analysis, then shows it (or the server's reason it cannot). */
  async load(): Promise<void> {
    await this._ready;
    const path = this._path;
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
    if (reply.workers.length) {
      this._head.appendChild(this._workers(reply));
    }
    this._head.appendChild(el('div', 'tt-trace-run', `${reply.reused ? 'Analysed before' : 'Analysed'}: ${reply.run}`));
    this._frame.src = reportUrl(reply.run);
    this._frame.hidden = false;
  }

  /** `Ranks analysed: 0, 1 (the report shows rank 0)`, each rank (or worker) a link showing its own report below. */
  private _workers(reply: TraceReply): HTMLElement {
    const ranked = reply.summary.ranks.length > 0;
    const line = el('div', 'tt-trace-workers', ranked ? 'Ranks analysed: ' : 'Traces analysed (separate runs): ');
    const links: HTMLAnchorElement[] = [];
    const choose = (chosen: HTMLAnchorElement, run: string) => {
      links.forEach(link => link.classList.toggle('tt-current', link === chosen));
      this._frame.src = reportUrl(run);
    };
    const link = (text: string, run: string, title: string) => {
      const anchor = el('a', 'tt-trace-worker', text) as HTMLAnchorElement;
      anchor.href = '#';
      anchor.title = title;
      anchor.addEventListener('click', event => {
        event.preventDefault();
        choose(anchor, run);
      });
      links.push(anchor);
      return anchor;
    };
    reply.workers.forEach((worker, i) => {
      if (i) {
        line.appendChild(document.createTextNode(', '));
      }
      const text = worker.rank !== null ? `${worker.rank}` : worker.name;
      line.appendChild(link(text, worker.run, `this worker's own report (${worker.run})`));
    });
    const shown = ranked ? `rank ${reply.summary.shown_rank ?? reply.summary.ranks[0]}` : reply.workers[0].name;
    line.appendChild(document.createTextNode(' · '));
    const all = link(ranked ? `all ranks (the report of ${shown})` : `the report of ${shown}`, reply.run, 'the run folder\'s report');
    all.classList.add('tt-current');
    line.appendChild(all);
    return line;
  }

  private _head: HTMLElement;
  private _frame: HTMLIFrameElement;
}

class TraceReportFactory extends ABCWidgetFactory<DocumentWidget<TraceReport>> {
  protected createNewWidget(context: DocumentRegistry.Context): DocumentWidget<TraceReport> {
    const content = new TraceReport(context.localPath, context.ready);
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

/** The file browser's one selected item, when it is a folder. */
function selectedFolder(browsers: IFileBrowserFactory): Contents.IModel | null {
  const selected = Array.from(browsers.tracker.currentWidget?.selectedItems() ?? []);
  return selected.length === 1 && selected[0].type === 'directory' ? selected[0] : null;
}

/** "Open as torchtriage trace report" on a folder in the file browser: its traces analysed as one report (a tab per folder). */
export function addTraceFolderCommand(app: JupyterFrontEnd, browsers: IFileBrowserFactory): void {
  const open = new Map<string, Widget>();
  app.commands.addCommand(OPEN_FOLDER_COMMAND, {
    label: 'Open as torchtriage trace report',
    caption: "Analyse the folder's torch.profiler traces (a logdir, one trace per rank) with torchtriage",
    isVisible: () => selectedFolder(browsers) !== null,
    isEnabled: () => selectedFolder(browsers) !== null,
    execute: () => {
      const folder = selectedFolder(browsers);
      if (!folder) {
        return;
      }
      const path = app.serviceManager.contents.localPath(folder.path);
      const existing = open.get(path);
      if (existing && !existing.isDisposed) {
        app.shell.activateById(existing.id);
        return;
      }
      const content = new TraceReport(path);
      content.id = `torchtriage-trace-folder-${encodeURIComponent(path)}`;
      content.title.label = `${folder.name}/ — torchtriage`;
      content.title.caption = `${path}/ — torchtriage report`;
      content.title.icon = folderIcon;
      content.title.closable = true;
      open.set(path, content);
      app.shell.add(content, 'main');
      app.shell.activateById(content.id);
      void content.load();
    }
  });
  app.contextMenu.addItem({ command: OPEN_FOLDER_COMMAND, selector: '.jp-DirListing-item[data-isdir="true"]', rank: 3 });
}
