/**
 * Annotations follow edits: after a text change, each annotated (0-based) line
 * moves by the number of lines inserted or removed above it; a line the change
 * touched loses its annotation (its measured cost no longer describes it).
 * Changes are applied in the order given, each in the coordinates left by the
 * previous one (as VS Code reports `contentChanges`).  Pure: no 'vscode'.
 */

export interface LineChange {
  /** 0-based, as in a VS Code / LSP range. */
  startLine: number;
  startCharacter: number;
  endLine: number;
  endCharacter: number;
  text: string;
}

export interface Lined {
  line: number;
}

function newlines(text: string): number {
  let count = 0;
  for (const ch of text) if (ch === "\n") count++;
  return count;
}

/** Where `line` goes after one change; undefined when the change edited it. */
export function mapLine(line: number, change: LineChange): number | undefined {
  const { startLine, startCharacter, endLine, endCharacter, text } = change;
  const delta = newlines(text) - (endLine - startLine);
  if (line < startLine) return line;
  // A whole-line insertion or deletion at column 0 leaves the line at endLine intact.
  const wholeLines = startCharacter === 0 && endCharacter === 0 && (text === "" || text.endsWith("\n"));
  const lastEdited = wholeLines ? endLine - 1 : endLine;
  if (line > lastEdited) return line + delta;
  return undefined;
}

export function shiftLines<T extends Lined>(items: readonly T[], changes: readonly LineChange[]): T[] {
  let current: T[] = [...items];
  for (const change of changes) {
    const next: T[] = [];
    for (const item of current) {
      const line = mapLine(item.line, change);
      if (line !== undefined) next.push({ ...item, line });
    }
    current = next;
  }
  return current;
}
