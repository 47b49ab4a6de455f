/**
 * torchtriage's diagnostics beside the user's Python language server.
 *
 * jupyterlab-lsp serves one language server per document: the highest ranked (pylsp, pyright,
 * jedi-language-server... or torchtriage).  When another server wins, this client talks to
 * `torchtriage lsp` itself, through jupyter-lsp's websocket (`/lsp/ws/torchtriage`, the same
 * proxy and auth), syncs the notebook as an LSP 3.17 notebook document and draws the
 * diagnostics on the cells (CodeMirror 6 mark decorations; hover shows code and message);
 * `fixLine` applies the server's quick fix for a line (textDocument/codeAction).
 * When torchtriage is jupyterlab-lsp's server, jupyterlab-lsp shows them and this stays idle.
 */
import { RangeSetBuilder, StateEffect, StateField, Extension } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView } from '@codemirror/view';
import { Cell } from '@jupyterlab/cells';
import { CodeMirrorEditor } from '@jupyterlab/codemirror';
import { URLExt } from '@jupyterlab/coreutils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';

export const SERVER_ID = 'torchtriage';

interface Diagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  message: string;
  code?: string | number;
  severity?: number;
  source?: string;
}

const setDiagnostics = StateEffect.define<Diagnostic[]>();
const SEVERITY = ['', 'error', 'warning', 'info', 'hint'];

function build(state: EditorView['state'], diagnostics: Diagnostic[]): DecorationSet {
  const doc = state.doc;
  const ranges: { from: number; to: number; d: Diagnostic }[] = [];
  for (const d of diagnostics) {
    const startLine = d.range.start.line + 1;
    const endLine = d.range.end.line + 1;
    if (startLine > doc.lines || endLine > doc.lines) {
      continue;
    }
    const from = Math.min(doc.line(startLine).from + d.range.start.character, doc.line(startLine).to);
    let to = Math.min(doc.line(endLine).from + d.range.end.character, doc.line(endLine).to);
    if (to <= from) {
      to = doc.line(startLine).to;
    }
    if (to > from) {
      ranges.push({ from, to, d });
    }
  }
  ranges.sort((a, b) => a.from - b.from || a.to - b.to);
  const builder = new RangeSetBuilder<Decoration>();
  for (const { from, to, d } of ranges) {
    const severity = SEVERITY[d.severity ?? 2] || 'warning';
    builder.add(
      from,
      to,
      Decoration.mark({
        class: `tt-diagnostic tt-diagnostic-${severity}`,
        attributes: { title: `${d.code ?? ''} ${d.message} (${d.source ?? SERVER_ID})`.trim(), 'data-code': `${d.code ?? ''}` }
      })
    );
  }
  return builder.finish();
}

export const diagnosticsField: Extension = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(value, tr) {
    for (const effect of tr.effects) {
      if (effect.is(setDiagnostics)) {
        return build(tr.state, effect.value);
      }
    }
    return value.map(tr.changes);
  },
  provide: field => EditorView.decorations.from(field)
});

/** One websocket LSP session with `torchtriage lsp` for one notebook. */
export class NotebookDiagnostics {
  constructor(private panel: NotebookPanel, private rootUri: string) {}

  start(): void {
    const settings = ServerConnection.makeSettings();
    let url = URLExt.join(settings.wsUrl, 'lsp', 'ws', SERVER_ID);
    if (settings.token && settings.appendToken) {
      url += `?token=${encodeURIComponent(settings.token)}`;
    }
    this._socket = new WebSocket(url);
    this._socket.onmessage = event => this._receive(JSON.parse(event.data));
    this._socket.onopen = () => void this._initialize();
    this.panel.disposed.connect(() => this.dispose());
  }

  dispose(): void {
    this._socket?.close();
    this._socket = null;
  }

  private get notebookUri(): string {
    return `${this.rootUri}/${this.panel.context.path}`;
  }

  private cellUri(cell: Cell): string {
    return `${this.notebookUri}#cell-${cell.model.id}`;
  }

  private _send(message: object): void {
    this._socket?.send(JSON.stringify({ jsonrpc: '2.0', ...message }));
  }

  private _request(method: string, params: object): Promise<any> {
    const id = ++this._nextId;
    this._send({ id, method, params });
    return new Promise(resolve => this._pending.set(id, resolve));
  }

  private async _initialize(): Promise<void> {
    await this._request('initialize', {
      processId: null,
      rootUri: this.rootUri,
      capabilities: {
        textDocument: { publishDiagnostics: { relatedInformation: false }, synchronization: {} },
        notebookDocument: { synchronization: { dynamicRegistration: false } }
      },
      initializationOptions: {}
    });
    this._send({ method: 'initialized', params: {} });
    this._ready = true;
    this._sync();
    this.panel.content.model?.contentChanged.connect(() => this._schedule());
  }

  private _schedule(): void {
    if (this._timer) {
      clearTimeout(this._timer);
    }
    this._timer = setTimeout(() => this._sync(), 400);
  }

  /** Re-open the notebook document with the current cells (simple and exact; notebooks are small). */
  private _sync(): void {
    if (!this._ready) {
      return;
    }
    if (this._open) {
      this._send({ method: 'notebookDocument/didClose', params: { notebookDocument: { uri: this.notebookUri }, cellTextDocuments: this._openCells.map(uri => ({ uri })) } });
    }
    const cells = this.panel.content.widgets.filter(c => c.model.type === 'code');
    this._version += 1;
    this._byUri.clear();
    for (const cell of cells) {
      this._byUri.set(this.cellUri(cell), cell);
    }
    this._openCells = cells.map(c => this.cellUri(c));
    this._send({
      method: 'notebookDocument/didOpen',
      params: {
        notebookDocument: {
          uri: this.notebookUri,
          notebookType: 'jupyter-notebook',
          version: this._version,
          cells: cells.map(c => ({ kind: 2, document: this.cellUri(c) }))
        },
        cellTextDocuments: cells.map(c => ({ uri: this.cellUri(c), languageId: 'python', version: this._version, text: c.model.sharedModel.getSource() }))
      }
    });
    this._open = true;
  }

  /** Apply the first quick fix the server offers for a diagnostic on this (0-based) line; false if none. */
  async fixLine(cell: Cell, line: number): Promise<boolean> {
    const uri = this.cellUri(cell);
    const diagnostics = (this._diagnostics.get(uri) ?? []).filter(d => d.range.start.line <= line && line <= d.range.end.line);
    if (!diagnostics.length) {
      return false;
    }
    const actions: any[] =
      (await this._request('textDocument/codeAction', {
        textDocument: { uri },
        range: diagnostics[0].range,
        context: { diagnostics, only: ['quickfix'] }
      })) ?? [];
    for (const action of actions) {
      const resolved = action.edit || !action.data ? action : await this._request('codeAction/resolve', action);
      const edits = resolved?.edit?.changes?.[uri] ??
        (resolved?.edit?.documentChanges ?? []).filter((c: any) => c.textDocument?.uri === uri).flatMap((c: any) => c.edits);
      if (action.kind?.startsWith('quickfix') && edits?.length) {
        applyEdits(cell, edits);
        return true;
      }
    }
    return false;
  }

  private _receive(message: any): void {
    if (message.id !== undefined && this._pending.has(message.id)) {
      this._pending.get(message.id)!(message.result);
      this._pending.delete(message.id);
      return;
    }
    if (message.id !== undefined && message.method) {
      this._send({ id: message.id, result: null }); // server requests (registerCapability, configuration...)
      return;
    }
    if (message.method === 'textDocument/publishDiagnostics') {
      this._diagnostics.set(message.params.uri, message.params.diagnostics);
      const cell = this._byUri.get(message.params.uri);
      const editor = cell?.editor;
      if (!cell || !(editor instanceof CodeMirrorEditor)) {
        return;
      }
      if (!this._injected.has(cell)) {
        editor.injectExtension(diagnosticsField);
        this._injected.add(cell);
      }
      editor.editor.dispatch({ effects: setDiagnostics.of(message.params.diagnostics as Diagnostic[]) });
    }
  }

  private _socket: WebSocket | null = null;
  private _nextId = 0;
  private _pending = new Map<number, (result: any) => void>();
  private _ready = false;
  private _open = false;
  private _version = 0;
  private _openCells: string[] = [];
  private _byUri = new Map<string, Cell>();
  private _diagnostics = new Map<string, Diagnostic[]>();
  private _injected = new WeakSet<Cell>();
  private _timer: ReturnType<typeof setTimeout> | null = null;
}

/** LSP text edits (0-based line/character) applied to a cell's source, last first. */
function applyEdits(cell: Cell, edits: { range: Diagnostic['range']; newText: string }[]): void {
  const source = cell.model.sharedModel.getSource();
  const starts = [0];
  for (let i = 0; i < source.length; i++) {
    if (source[i] === '\n') {
      starts.push(i + 1);
    }
  }
  const offset = (p: { line: number; character: number }) =>
    p.line < starts.length ? Math.min(starts[p.line] + p.character, source.length) : source.length;
  let text = source;
  for (const edit of [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start))) {
    text = text.slice(0, offset(edit.range.start)) + edit.newText + text.slice(offset(edit.range.end));
  }
  cell.model.sharedModel.setSource(text);
}
