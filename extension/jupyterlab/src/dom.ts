/** DOM building shared by the renderers (the profile payload under a cell, an analysed trace's page). */

/** A new `tag` element with `className` and, when given, `text` as its text. */
export function el(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}
