/* Factcheck-Bench step 1's answers as plain data: blank sentences and claims, what a sentence
 * still lacks, readable field paths (factcheck.js draws the page). */

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

/* What a sentence still lacks before it can be submitted (empty when it is done), by the
 * kind's rules (``required``: field -> its name, for a sentence and for each of its claims). */
export function sentenceLacks(required) {
  const lacks = (unit, fields) => Object.entries(fields).filter(([name]) => !String(unit[name] ?? "").trim()).map(([, what]) => what);
  return (sentence) => {
    const out = lacks(sentence, required.sentence);
    sentence.claims.forEach((claim, index) => {
      const claimLacks = lacks(claim, required.claim);
      if (claimLacks.length) out.push(`claim ${index + 1} ${claimLacks.join(", ")}`);
    });
    return out;
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
