/* Factcheck-Bench step 3's text as plain data: the revised response joined from the revised
 * sentences, what a join leaves out, and the paper's two measures (factcheck_step3.js draws the page). */

export const normalise = (text) => (text || "").split(/\s+/).filter(Boolean).join(" ");
export const joinRevised = (sentences) => sentences.map((s) => normalise(s.revised)).filter(Boolean).join(" ");

/* The paper's two measures, as pipeline/text_measures.py computes them (docs/measures.md). */
/* Normalised edit distance: character Levenshtein of the texts as given over the longer length. */
export function editDistance(a, b) {
  a = Array.from(a || "");  // characters (code points), as Python counts them
  b = Array.from(b || "");
  const longer = Math.max(a.length, b.length);
  if (!longer) return 0;
  if (a.length * b.length > 4e6) return 1;  // too long to compare while typing
  let previous = Array.from({length: b.length + 1}, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const row = [i];
    for (let j = 1; j <= b.length; j += 1) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length] / longer;
}

/* Word overlap: whitespace tokens, case and punctuation kept; the share of the longer list's
 * tokens (the first text's at equal length) that occur in the shorter list, each occurrence counted. */
export function wordOverlap(a, b) {
  const left = (a || "").split(/\s+/).filter(Boolean), right = (b || "").split(/\s+/).filter(Boolean);
  const [longer, shorter] = left.length >= right.length ? [left, right] : [right, left];
  if (!longer.length) return 1;
  const present = new Set(shorter);
  return longer.filter((token) => present.has(token)).length / longer.length;
}

/* What joining the revised sentences leaves out, said in a sentence: never silent. */
export function joinNote(sentences) {
  const removed = [], undecided = [];
  sentences.forEach((s, i) => {
    if (s.revised === null) undecided.push(i + 1);
    else if (!normalise(s.revised)) removed.push(i + 1);
  });
  const list = (numbers) => `sentence${numbers.length > 1 ? "s" : ""} ${numbers.join(", ")}`;
  const parts = [removed.length && `${list(removed)} (removed)`,
    undecided.length && `${list(undecided)} (undecided: no revision yet — decide ${undecided.length > 1 ? "them" : "it"}, then join again)`]
    .filter(Boolean);
  return parts.length ? `Joined; left out: ${parts.join("; ")}.` : `Joined all ${sentences.length} revised sentences.`;
}
