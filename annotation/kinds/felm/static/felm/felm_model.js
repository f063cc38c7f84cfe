/* FELM's segments as plain data: where a segment is in the response, what a typed link lacks,
 * readable field paths (felm.js draws the page). */

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/* Where a segment is in the response, at ``from`` or later: whitespace and case aside, and
 * with up to three words dropped at either end (released segments are sometimes trimmed,
 * e.g. "It's worth noting that the merger…" became "The merger…"). */
export function findSegment(text, segment, from) {
  const words = segment.split(/\s+/).filter(Boolean).map(escapeRegExp);
  const tries = [[0, words.length]];
  for (let k = 1; k <= 3 && words.length - k >= 4; k += 1) tries.push([k, words.length], [0, words.length - k]);
  for (const [first, end] of tries) {
    const pattern = new RegExp(words.slice(first, end).join("\\s+"), "giu");
    pattern.lastIndex = from;
    const match = pattern.exec(text);
    if (match) return match;
  }
  return null;
}

/* "segments[2].error_type" -> "Segment 3, error type" */
export function readableField(field) {
  const match = /^segments\[(\d+)\](?:\.(\w+))?/.exec(field);
  if (!match) return field;
  return `Segment ${Number(match[1]) + 1}${match[2] ? `, ${match[2].replace("_", " ")}` : ""}`;
}

/* The segment index an error's field names, or null. */
export function segmentOf(field) {
  const match = /^segments\[(\d+)\]/.exec(field || "");
  return match ? Number(match[1]) : null;
}

/* A link typed in a segment's box that is not an http(s) link: what to say, else null. */
export function badLink(typed) {
  const value = (typed || "").trim();
  if (!value) return null;
  try { if (/^https?:$/.test(new URL(value).protocol)) return null; } catch (e) { /* not a URL */ }
  return `a valid link (“${value}” is not an http(s) link: fix it or clear the box)`;
}
