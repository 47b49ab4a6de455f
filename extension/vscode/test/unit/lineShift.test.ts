import assert from "node:assert/strict";
import { test } from "node:test";
import { LineChange, mapLine, shiftLines } from "../../src/pure/lineShift";

const change = (startLine: number, startCharacter: number, endLine: number, endCharacter: number, text: string): LineChange => ({
  startLine,
  startCharacter,
  endLine,
  endCharacter,
  text,
});

test("lines above an edit stay; lines below move by the lines added", () => {
  const insert = change(5, 0, 5, 0, "a = 1\nb = 2\n");
  assert.equal(mapLine(2, insert), 2);
  assert.equal(mapLine(5, insert), 7, "a whole-line insertion above keeps the line");
  assert.equal(mapLine(9, insert), 11);
});

test("deleted lines lose their annotation, later ones move up", () => {
  const remove = change(5, 0, 7, 0, "");
  assert.equal(mapLine(4, remove), 4);
  assert.equal(mapLine(5, remove), undefined);
  assert.equal(mapLine(6, remove), undefined);
  assert.equal(mapLine(7, remove), 5);
});

test("typing inside a line drops that line only", () => {
  const typed = change(5, 4, 5, 4, "x");
  assert.equal(mapLine(5, typed), undefined);
  assert.equal(mapLine(6, typed), 6);
});

test("a newline typed mid-line pushes the following lines down", () => {
  const enter = change(5, 10, 5, 10, "\n    ");
  assert.equal(mapLine(5, enter), undefined);
  assert.equal(mapLine(6, enter), 7);
});

test("several changes apply in order, keeping the other fields", () => {
  const items = [
    { line: 3, label: "a" },
    { line: 10, label: "b" },
  ];
  const shifted = shiftLines(items, [change(0, 0, 0, 0, "import os\n"), change(4, 0, 5, 0, "")]);
  assert.deepEqual(shifted, [{ line: 10, label: "b" }]);
  assert.deepEqual(shiftLines(items, [change(0, 0, 0, 0, "# hi\n# there\n")]), [
    { line: 5, label: "a" },
    { line: 12, label: "b" },
  ]);
  assert.deepEqual(items[0], { line: 3, label: "a" }, "the input is not modified");
});
