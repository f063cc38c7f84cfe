/* Factcheck-Bench step 1's answers as plain data: blank sentences and claims,
 * readable field paths, the alignment rows of a consolidation (factcheck.js draws the page). */

export const normalise = (text) => (text || "").split(/\s+/).filter(Boolean).join(" ");
export const clone = (value) => JSON.parse(JSON.stringify(value));

export function blankClaim(claim = {}) {
  return {text: claim.text || "", category: claim.category ?? null, importance: claim.importance ?? null};
}

export function blankSentence(sentence = {}) {
  return {
    decontext: sentence.decontext || "",
    importance: sentence.importance ?? null,
    checkworthy: sentence.checkworthy ?? null,
    claims: (sentence.claims || []).map(blankClaim),
  };
}

/* "sentences[1].claims[0].text" → "Sentence 2, claim 1, text". */
export function readablePath(path) {
  return (path || "")
    .replace(/^sentences\[(\d+)\]\.?/, (_, i) => `Sentence ${Number(i) + 1}, `)
    .replace(/claims\[(\d+)\]\.?/, (_, i) => `claim ${Number(i) + 1}, `)
    .replace(/, $/, "");
}

export function autosize(textarea) {
  if (window.CSS && CSS.supports && CSS.supports("field-sizing", "content")) return;
  textarea.style.height = "auto";
  textarea.style.height = `${textarea.scrollHeight + 2}px`;
}

// -- consolidation: the annotators' claims, by alignment row ---------------------------------

/* Annotator k's claim in alignment row ``row`` of sentence i (null when they have none there). */
export function theirClaim(annotations, alignment, k, i, row) {
  const rows = alignment[i] || [];
  const claimIndex = rows[row] ? rows[row][k] : null;
  if (claimIndex === null || claimIndex === undefined) return null;
  return annotations[k].payload.sentences[i].claims[claimIndex] || null;
}

/* Each gold claim's alignment row (rowOf: claim -> row), so comparisons follow a moved claim.
 * A saved draft says which row each claim came from. Without that (a draft saved before rows
 * were recorded), claims are matched to rows by text first (same position preferred), then
 * by position; the opened draft has one claim per row. */
export function linkClaimsToRows({sentences, annotations, alignment, rowOf}, saved) {
  const rowTexts = (i, row) => annotations.map((_, k) => theirClaim(annotations, alignment, k, i, row)).filter(Boolean).map((c) => normalise(c.text));
  sentences.forEach((sentence, i) => {
    const rows = alignment[i] || [];
    if (Array.isArray(saved[i]) && saved[i].length === sentence.claims.length) {
      sentence.claims.forEach((claim, r) => { if (saved[i][r] !== null && saved[i][r] < rows.length) rowOf.set(claim, saved[i][r]); });
      return;
    }
    const used = new Set();
    const unmatched = [];
    sentence.claims.forEach((claim, r) => {
      const text = normalise(claim.text);
      const matches = (row) => !used.has(row) && text && rowTexts(i, row).includes(text);
      const row = matches(r) ? r : rows.findIndex((_, k) => matches(k));
      if (row >= 0) { rowOf.set(claim, row); used.add(row); } else unmatched.push([claim, r]);
    });
    for (const [claim, r] of unmatched) {
      if (r < rows.length && !used.has(r) && !normalise(claim.text)) { rowOf.set(claim, r); used.add(r); }
    }
  });
}
