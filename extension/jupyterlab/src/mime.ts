/** A mime renderer for the profile payload: verdict, step breakdown chart, top lines. */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { el } from './dom';
import { LABELS, MIME_TYPE, Payload, ms, pct, where } from './payload';

const COLORS: Record<string, string> = {
  data_loading: '#e8a33d',
  host_sync: '#d9534f',
  python_overhead: '#9b59b6',
  launch_overhead: '#5bc0de',
  compute: '#5cb85c',
  optimizer: '#3c8d5c',
  communication: '#337ab7',
  idle: '#bbbbbb'
};

export function renderPayload(host: HTMLElement, payload: Payload): void {
  host.textContent = '';
  const report = payload.report;
  const status = payload.status;
  if (status.status !== 'completed' && status.status !== 'stopped_after_window') {
    host.appendChild(el('div', 'tt-status', `Run ${status.status}: ${status.message}`));
  }
  if (!report) {
    host.appendChild(el('div', 'tt-empty', `Nothing was recorded. Run folder: ${payload.run_dir}`));
    return;
  }
  const verdict = report.bottleneck;
  const head = el('div', 'tt-verdict');
  head.appendChild(el('span', 'tt-verdict-kind', LABELS[verdict.kind] ?? verdict.kind));
  if (verdict.kind !== 'none') {
    head.appendChild(el('span', 'tt-verdict-share', ` ${pct(verdict.share)} of the step`));
  }
  head.appendChild(
    el('span', 'tt-verdict-step', ` · ${ms(report.step_time_ms)}/step over ${report.steps_profiled} step(s) (${report.step_detection})`)
  );
  host.appendChild(head);
  for (const item of verdict.evidence.slice(0, 2)) {
    host.appendChild(el('div', 'tt-evidence', item.text));
  }
  // Step breakdown: one stacked bar, a legend with shares.
  const bar = el('div', 'tt-breakdown');
  const legend = el('div', 'tt-legend');
  for (const [category, share] of Object.entries(report.breakdown).sort((a, b) => b[1] - a[1])) {
    if (share < 0.005) {
      continue;
    }
    const part = el('div', 'tt-part');
    part.style.width = `${share * 100}%`;
    part.style.background = COLORS[category] ?? '#888';
    part.title = `${LABELS[category] ?? category}: ${pct(share)} · ${ms(report.breakdown_ms[category] ?? 0)}`;
    part.dataset.category = category;
    bar.appendChild(part);
    const key = el('span', 'tt-key', `${LABELS[category] ?? category} ${pct(share)}`);
    key.style.borderLeftColor = COLORS[category] ?? '#888';
    legend.appendChild(key);
  }
  host.appendChild(bar);
  host.appendChild(legend);
  // Top lines.
  const table = el('table', 'tt-hotlines');
  const header = el('tr', '');
  for (const title of ['share', 'ms/step', 'where', 'line', 'category']) {
    header.appendChild(el('th', '', title));
  }
  table.appendChild(header);
  for (const spot of report.hotspots.filter(h => h.share >= 0.005).slice(0, 8)) {
    const row = el('tr', 'tt-hotline');
    row.appendChild(el('td', 'tt-num', pct(spot.share)));
    row.appendChild(el('td', 'tt-num', spot.self_ms_per_step.toFixed(2)));
    row.appendChild(el('td', 'tt-where', where(payload, spot)));
    row.appendChild(el('td', 'tt-source', spot.source));
    row.appendChild(el('td', '', LABELS[spot.category] ?? spot.category));
    table.appendChild(row);
  }
  host.appendChild(table);
  const fixes = verdict.recommendations.slice(0, 2);
  if (fixes.length) {
    const list = el('ol', 'tt-fixes');
    for (const fix of fixes) {
      list.appendChild(el('li', '', fix.action));
    }
    host.appendChild(el('div', 'tt-fixes-title', 'Try first:'));
    host.appendChild(list);
  }
  host.appendChild(el('div', 'tt-rundir', `Run folder: ${payload.run_dir}`));
}

export class ProfileRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this.addClass('jp-torchtriage-profile');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    renderPayload(this.node, model.data[this._mimeType] as unknown as Payload);
    return Promise.resolve();
  }

  private _mimeType: string;
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: options => new ProfileRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'torchtriage-jupyterlab:mime',
  rendererFactory,
  rank: 0,
  dataType: 'json'
};

export default extension;
