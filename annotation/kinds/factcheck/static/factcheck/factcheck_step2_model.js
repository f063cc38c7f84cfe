/* Factcheck-Bench step 2's claim answers as plain data: blank answers, readable field paths,
 * the evidence rows a consolidation renumbers (factcheck_step2.js draws the page). */

export const MANUAL = "manual:";
// The box an annotator ticks on evidence their correction uses (its text, and what a hint names).
export const USES_IT = "correction uses it";

export const normalise = (text) => (text || "").split(/\s+/).filter(Boolean).join(" ");
export const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function blankManual(entry = {}) {
  return {text: entry.text || "", url: entry.url || "", query: entry.query || "",
    reliable: entry.reliable ?? null, sufficient: entry.sufficient ?? null};
}

export function blankClaim(claim, saved = {}) {
  const passages = (claim.evidence || []).length;
  const list = (values) => Array.from({length: passages}, (_, k) => (Array.isArray(values) ? values[k] ?? null : null));
  return {
    stances: list(saved.stances), reliable: list(saved.reliable), decided: saved.decided ?? null,
    manual_evidence: (saved.manual_evidence || []).map(blankManual),
    factuality: saved.factuality ?? null, needs_edit: saved.needs_edit ?? null,
    correction: saved.correction ?? claim.text ?? "", used_evidence: [...(saved.used_evidence || [])],
  };
}

/* "claims[1].stances[0]" → "Claim 2, passage 1, stance". */
export function readablePath(path) {
  return (path || "")
    .replace(/^claims\[(\d+)\]\.?/, (_, i) => `Claim ${Number(i) + 1}, `)
    .replace(/(stances|reliable)\[(\d+)\]/, (_, f, k) => `passage ${Number(k) + 1} ${f === "stances" ? "stance" : "reliability"}`)
    .replace(/manual_evidence\[(\d+)\]\.?/, (_, k) => `your evidence ${Number(k) + 1} `)
    .replace(/used_evidence(\[\d+\])?/, "evidence used")
    .replace(/needs_edit/, "needs an edit")
    .replace(/[, ]+$/, "");
}

export function usedLabel(value) {
  return typeof value === "string" ? `your evidence ${Number(value.slice(MANUAL.length)) + 1}` : `passage ${value + 1}`;
}

/* The evidence a correction uses once the annotator's evidence ``index`` is removed: the
 * "manual:N" references follow the entries they name. */
export function usedWithoutManual(used, index) {
  return used.flatMap((value) => {
    if (typeof value !== "string") return [value];
    const n = Number(value.slice(MANUAL.length));
    if (n === index) return [];
    return [n > index ? `${MANUAL}${n - 1}` : value];
  });
}

/* An annotator's used evidence in the consolidation's numbering of manual evidence (``rows``:
 * the alignment of the claim's manual evidence, one row per consolidated entry). */
export function usedInRows(used, rows, annotationIndex) {
  return used.map((value) => {
    if (typeof value !== "string") return value;
    const own = Number(value.slice(MANUAL.length));
    const row = rows.findIndex((r) => r[annotationIndex] === own);
    return row >= 0 ? `${MANUAL}${row}` : value;
  });
}
