/** A side panel listing the profile runs under the server root, with their verdicts. */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { LABELS, ms, pct } from './payload';

export interface RunSummary {
  path: string;
  script: string | null;
  status: string | null;
  bottleneck: string | null;
  share: number | null;
  step_time_ms: number | null;
  steps_profiled: number | null;
  mtime: number;
}

export async function requestAPI<T>(endPoint: string, init: RequestInit = {}): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'torchtriage', endPoint);
  const response = await ServerConnection.makeRequest(url, init, settings);
  const text = await response.text();
  const data = text ? JSON.parse(text) : {};
  if (!response.ok) {
    throw new ServerConnection.ResponseError(response, data.message || text);
  }
  return data as T;
}

export class RunsPanel extends Widget {
  constructor() {
    super();
    this.id = 'torchtriage-runs';
    this.title.label = 'Profiles';
    this.title.caption = 'torchtriage profile runs';
    this.addClass('jp-torchtriage-runs');
    const bar = document.createElement('div');
    bar.className = 'tt-runs-bar';
    const refresh = document.createElement('button');
    refresh.className = 'jp-Button tt-runs-refresh';
    refresh.textContent = 'Refresh';
    refresh.onclick = () => void this.refresh();
    bar.appendChild(refresh);
    this.node.appendChild(bar);
    this._list = document.createElement('ul');
    this._list.className = 'tt-runs-list';
    this.node.appendChild(this._list);
  }

  async refresh(): Promise<void> {
    try {
      const { runs } = await requestAPI<{ runs: RunSummary[] }>('runs');
      this._list.textContent = '';
      if (!runs.length) {
        this._list.appendChild(Object.assign(document.createElement('li'), { textContent: 'No runs yet: use "Profile this cell".' }));
      }
      for (const run of runs) {
        const item = document.createElement('li');
        item.className = 'tt-run';
        const kind = run.bottleneck ?? 'none';
        const verdict = kind === 'none' ? LABELS.none : `${LABELS[kind] ?? kind} ${pct(run.share ?? 0)}`;
        const step = run.step_time_ms !== null ? ` · ${ms(run.step_time_ms)}/step` : '';
        item.innerHTML = '';
        const name = document.createElement('div');
        name.className = 'tt-run-name';
        name.textContent = run.path.split('/').pop() ?? run.path;
        const detail = document.createElement('div');
        detail.className = 'tt-run-verdict';
        detail.textContent = `${verdict}${step} (${run.status ?? '?'})`;
        item.title = run.path;
        item.appendChild(name);
        item.appendChild(detail);
        const actions = document.createElement('div');
        actions.className = 'tt-run-actions';
        const report = document.createElement('a');
        report.className = 'tt-run-report';
        report.textContent = 'report';
        report.target = '_blank';
        report.href = URLExt.join(ServerConnection.makeSettings().baseUrl, 'torchtriage', 'html') + `?path=${encodeURIComponent(run.path)}`;
        const board = document.createElement('a');
        board.className = 'tt-run-tensorboard';
        board.textContent = 'TensorBoard';
        board.href = '#';
        board.onclick = event => {
          event.preventDefault();
          void this.tensorboard(run.path, board);
        };
        actions.appendChild(report);
        actions.appendChild(document.createTextNode(' · '));
        actions.appendChild(board);
        item.appendChild(actions);
        this._list.appendChild(item);
      }
    } catch (error) {
      this._list.textContent = `Could not list runs: ${error}`;
    }
  }

  /** Starts TensorBoard on the run's logdir on the server and opens it (a local server: its own port). */
  async tensorboard(path: string, link: HTMLAnchorElement): Promise<void> {
    link.textContent = 'TensorBoard (starting...)';
    try {
      const { url } = await requestAPI<{ url: string }>('tensorboard', { method: 'POST', body: JSON.stringify({ path }) });
      link.textContent = 'TensorBoard';
      window.open(url, '_blank');
    } catch (error) {
      link.textContent = `TensorBoard: ${error}`;
    }
  }

  protected onAfterShow(): void {
    void this.refresh();
  }

  private _list: HTMLUListElement;
}
