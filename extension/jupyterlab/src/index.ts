/**
 * torchtriage in JupyterLab: "Profile this cell" (toolbar button, command palette, cell context
 * menu) runs the cell under %%torchtriage in the live kernel; the profile's hot lines are drawn on
 * the cell's editor; a side panel lists the runs.  The report itself is drawn by the mime renderer
 * (mime.ts).  Diagnostics come from `torchtriage lsp` through jupyter-lsp: shown by jupyterlab-lsp when it
 * serves torchtriage, else by diagnostics.ts beside the Python server jupyterlab-lsp chose.
 * A torch.profiler trace in the file browser opens as a report, and so does a folder of traces (trace.ts).
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, ToolbarButton } from '@jupyterlab/apputils';
import { Cell, CodeCell } from '@jupyterlab/cells';
import { CodeMirrorEditor } from '@jupyterlab/codemirror';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { OutputArea } from '@jupyterlab/outputarea';
import { ILSPDocumentConnectionManager } from '@jupyterlab/lsp';
import { EditorView } from '@codemirror/view';

import { hotLines, marksFor, setMarks } from './annotations';
import { MIME_TYPE, Payload } from './payload';
import { RunsPanel, requestAPI } from './runs';
import { NotebookDiagnostics, SERVER_ID } from './diagnostics';
import { addTraceFolderCommand, registerTraceReports } from './trace';

export const COMMAND = 'torchtriage:profile-cell';
export const FIX_COMMAND = 'torchtriage:fix-line';
const LOAD = 'import torchtriage as _torchtriage; _torchtriage.load_ipython_extension(get_ipython()); del _torchtriage';
const MAGIC = '%%torchtriage';

/** The code sent for a cell: as it is when it starts with the magic, else wrapped in it. */
export function wrapped(source: string): string {
  return source.trimStart().startsWith(MAGIC) ? source : `${MAGIC} --first-line 1\n${source}`;
}

function editorView(cell: Cell): EditorView | null {
  const editor = cell.editor;
  return editor instanceof CodeMirrorEditor ? editor.editor : null;
}

/** Keeps each cell's annotations in step with its outputs: drawn when a profile payload arrives. */
class Annotator {
  private _injected = new WeakSet<Cell>();
  private _watched = new WeakSet<Cell>();

  watch(cell: Cell): void {
    if (!(cell instanceof CodeCell) || this._watched.has(cell)) {
      return;
    }
    this._watched.add(cell);
    const update = () => this.apply(cell);
    cell.model.outputs.changed.connect(update);
    void cell.ready.then(update);
  }

  apply(cell: CodeCell): void {
    const view = editorView(cell);
    if (!view) {
      return;
    }
    if (!this._injected.has(cell)) {
      (cell.editor as CodeMirrorEditor).injectExtension(hotLines);
      this._injected.add(cell);
    }
    let payload: Payload | null = null;
    const outputs = cell.model.outputs;
    for (let i = 0; i < outputs.length; i++) {
      const data = outputs.get(i).data[MIME_TYPE];
      if (data) {
        payload = data as unknown as Payload;
      }
    }
    view.dispatch({ effects: setMarks.of(payload ? marksFor(payload) : []) });
  }
}

async function profileCell(panel: NotebookPanel, cell: CodeCell, runs: RunsPanel): Promise<void> {
  const context = panel.sessionContext;
  await context.ready;
  const kernel = context.session?.kernel;
  if (!kernel) {
    throw new Error('torchtriage: this notebook has no running kernel');
  }
  await kernel.requestExecute({ code: LOAD, silent: true, store_history: false }).done;
  cell.model.sharedModel.transact(() => {
    cell.model.clearExecution();
  });
  cell.setPrompt('*');
  try {
    const reply = await OutputArea.execute(wrapped(cell.model.sharedModel.getSource()), cell.outputArea, context);
    cell.setPrompt(reply ? `${reply.content.execution_count}` : ' ');
  } catch (error) {
    cell.setPrompt(' ');
    throw error;
  }
  void runs.refresh();
}

/**
 * Whether torchtriage's diagnostics need our own client: jupyter-lsp runs torchtriage, but
 * jupyterlab-lsp serves python notebooks with another (higher or equally ranked) server.
 */
async function besideOtherServer(lsp: ILSPDocumentConnectionManager | null): Promise<boolean> {
  if (!lsp) {
    return true; // no jupyterlab-lsp front end: diagnostics only come from us
  }
  const manager = lsp.languageServerManager;
  await manager.ready;
  const servers = manager.getMatchingServers({ language: 'python' }) as string[];
  return servers.includes(SERVER_ID) && servers[0] !== SERVER_ID;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'torchtriage-jupyterlab:plugin',
  description: 'Profile notebook cells with torchtriage in the live kernel and annotate their hot lines.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ILayoutRestorer, ILSPDocumentConnectionManager, IFileBrowserFactory],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    lsp: ILSPDocumentConnectionManager | null,
    browsers: IFileBrowserFactory | null
  ) => {
    registerTraceReports(app.docRegistry);
    if (browsers) {
      addTraceFolderCommand(app, browsers);
    }
    const annotator = new Annotator();
    const clients = new WeakMap<NotebookPanel, NotebookDiagnostics>();
    const runs = new RunsPanel();
    app.shell.add(runs, 'right', { rank: 900 });
    if (restorer) {
      restorer.add(runs, runs.id);
    }

    app.commands.addCommand(COMMAND, {
      label: 'Profile this cell',
      caption: 'Run the active cell under %%torchtriage in the live kernel and annotate its hot lines',
      isEnabled: () => tracker.activeCell instanceof CodeCell,
      execute: async () => {
        const panel = tracker.currentWidget;
        const cell = tracker.activeCell;
        if (!panel || !(cell instanceof CodeCell)) {
          return;
        }
        await profileCell(panel, cell, runs);
      }
    });
    app.commands.addCommand(FIX_COMMAND, {
      label: 'Apply torchtriage quick fix on this line',
      caption: 'Beside another Python language server: apply the fix torchtriage offers for the line at the cursor',
      isEnabled: () => !!tracker.currentWidget && clients.has(tracker.currentWidget),
      execute: async () => {
        const panel = tracker.currentWidget;
        const cell = tracker.activeCell;
        const client = panel ? clients.get(panel) : undefined;
        if (!panel || !cell || !client) {
          return;
        }
        const line = cell.editor?.getCursorPosition().line ?? 0;
        await client.fixLine(cell, line);
      }
    });
    if (palette) {
      palette.addItem({ command: COMMAND, category: 'torchtriage' });
      palette.addItem({ command: FIX_COMMAND, category: 'torchtriage' });
    }
    app.contextMenu.addItem({ command: FIX_COMMAND, selector: '.jp-Notebook .jp-CodeCell', rank: 1 });
    app.contextMenu.addItem({ command: COMMAND, selector: '.jp-Notebook .jp-CodeCell', rank: 0 });

    tracker.widgetAdded.connect((_, panel) => {
      const button = new ToolbarButton({
        className: 'tt-profile-button',
        label: 'Profile this cell',
        tooltip: 'Profile the active cell in the live kernel (torchtriage)',
        onClick: () => void app.commands.execute(COMMAND)
      });
      panel.toolbar.insertAfter('cellType', 'torchtriage-profile', button);
      const watchAll = () => {
        for (const cell of panel.content.widgets) {
          annotator.watch(cell);
        }
      };
      panel.content.model?.cells.changed.connect(() => setTimeout(watchAll, 0));
      void panel.revealed.then(watchAll);
      void besideOtherServer(lsp).then(async needed => {
        if (needed) {
          const { root_uri } = await requestAPI<{ root_uri: string }>('root');
          const client = new NotebookDiagnostics(panel, root_uri);
          clients.set(panel, client);
          client.start();
        }
      });
    });
  }
};

export default plugin;
