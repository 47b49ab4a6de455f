/**
 * Hot-line annotations on a profiled cell's editor (CodeMirror 6 decorations):
 * a heat mark on each hot line, a "38% · 12 ms" label at its end, and a hover
 * with the line's share of the step and the step breakdown.  Cleared when the
 * cell's text changes.
 */
import { Extension, RangeSetBuilder, StateEffect, StateField } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView, WidgetType } from '@codemirror/view';

import { Hotspot, LABELS, Payload, cellHotspots, ms, pct } from './payload';

export interface LineMark {
  line: number; // 1-based line of the editor
  label: string;
  hover: string;
  heat: number; // 1 (warm) .. 3 (hot)
}

export const setMarks = StateEffect.define<LineMark[]>();

class Label extends WidgetType {
  constructor(readonly mark: LineMark) {
    super();
  }
  eq(other: Label): boolean {
    return other.mark.label === this.mark.label && other.mark.hover === this.mark.hover;
  }
  toDOM(): HTMLElement {
    const span = document.createElement('span');
    span.className = `tt-hot-label tt-heat-${this.mark.heat}`;
    span.textContent = this.mark.label;
    span.title = this.mark.hover;
    return span;
  }
}

function build(view: { state: EditorView['state'] }, marks: LineMark[]): DecorationSet {
  const builder = new RangeSetBuilder<Decoration>();
  const doc = view.state.doc;
  for (const mark of [...marks].sort((a, b) => a.line - b.line)) {
    if (mark.line < 1 || mark.line > doc.lines) {
      continue;
    }
    const line = doc.line(mark.line);
    builder.add(
      line.from,
      line.from,
      Decoration.line({ attributes: { class: `tt-hot-line tt-heat-${mark.heat}`, title: mark.hover } })
    );
    builder.add(line.to, line.to, Decoration.widget({ widget: new Label(mark), side: 1 }));
  }
  return builder.finish();
}

export const hotLines: Extension = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(value, tr) {
    for (const effect of tr.effects) {
      if (effect.is(setMarks)) {
        return build(tr, effect.value);
      }
    }
    return tr.docChanged ? Decoration.none : value; // an edit makes the profile stale
  },
  provide: field => EditorView.decorations.from(field)
});

/** The marks for a payload: its lines are the cell's own (the magic ran with the right --first-line). */
export function marksFor(payload: Payload): LineMark[] {
  const report = payload.report;
  if (!report) {
    return [];
  }
  const breakdown = Object.entries(report.breakdown)
    .filter(([, share]) => share >= 0.01)
    .sort((a, b) => b[1] - a[1])
    .map(([category, share]) => `${LABELS[category] ?? category} ${pct(share)}`)
    .join(', ');
  return cellHotspots(payload).map((spot: Hotspot) => ({
    line: spot.line,
    label: `${pct(spot.share)} · ${ms(spot.self_ms_per_step)}`,
    heat: spot.share >= 0.3 ? 3 : spot.share >= 0.1 ? 2 : 1,
    hover:
      `${pct(spot.share)} of the step (${ms(spot.self_ms_per_step)} per step), mostly ${LABELS[spot.category] ?? spot.category}` +
      (spot.top_names.length ? `: ${spot.top_names.slice(0, 3).join(', ')}` : '') +
      (spot.detail ? `\n${spot.detail}` : '') +
      `\nStep (${ms(report.step_time_ms)}): ${breakdown}`
  }));
}
