/*
 * Word diff for the pages where annotators rewrite text (a step-2 correction, a step-3
 * revision): render(before, after) gives a node with deleted words struck through
 * and inserted words marked, built from text nodes only.
 */
import {el} from "./common.js";

// Longer texts are compared as a whole replacement: the table is (n+1)·(m+1) cells.
const MAX_CELLS = 250000;

export const words = (text) => (text || "").split(/\s+/).filter(Boolean);

/* [["same" | "del" | "ins", word], …]: a longest common subsequence of the two word lists. */
export function diff(before, after) {
  const a = words(before), b = words(after);
  if ((a.length + 1) * (b.length + 1) > MAX_CELLS) return [...a.map((w) => ["del", w]), ...b.map((w) => ["ins", w])];
  const width = b.length + 1;
  const table = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      table[i * width + j] = a[i] === b[j] ? table[(i + 1) * width + j + 1] + 1
        : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
    }
  }
  const ops = [];
  let i = 0, j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) { ops.push(["same", a[i]]); i += 1; j += 1; }
    else if (table[(i + 1) * width + j] >= table[i * width + j + 1]) { ops.push(["del", a[i]]); i += 1; }
    else { ops.push(["ins", b[j]]); j += 1; }
  }
  while (i < a.length) ops.push(["del", a[i++]]);
  while (j < b.length) ops.push(["ins", b[j++]]);
  return ops;
}

export function render(before, after, {className = "word-diff"} = {}) {
  const ops = diff(before, after);
  const changed = ops.some(([op]) => op !== "same");
  const node = el("div", {className, "aria-label": "changes against the original"});
  if (!changed) {
    node.append(el("span", {className: "diff-none"}, "no change from the original"));
    return node;
  }
  ops.forEach(([op, word], index) => {
    if (index) node.append(" ");
    node.append(op === "same" ? word : el(op, {}, word));
  });
  return node;
}
