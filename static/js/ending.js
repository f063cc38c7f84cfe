/* How every annotation page ends: submit and go on, read-only when there is nothing to edit,
 * and the page's start (submit button, keys, legend). */
import {listenForKeys, showLegend} from "./keys.js";

/* Submit (the saver validates on the server) and go on to the next item. */
let submitting = false;
export async function submitAndContinue(saverInstance, button, nextUrl) {
  if (submitting) return;  // a second Ctrl+Enter while the first submit runs
  submitting = true;
  button.disabled = true;
  const result = await saverInstance.save(true);
  submitting = false;
  button.disabled = false;
  if (result.ok) window.location.href = nextUrl;
}

export function showReadOnly(button, statusElement, state) {
  button.disabled = true;
  const why = state.submitted ? "Submitted" : {discarded: "Discarded", done: "Gold record saved"}[state.status];
  statusElement.textContent = why ? `${why} — read-only` : "Read-only";
}

/* The end of a page's start: read-only state, the submit button, the keys and their legend. */
export function endPage({state, parts, submit, onKey, legend = null, consolidation = false}) {
  if (legend) showLegend(parts.keysEl, legend, consolidation);
  if (state.read_only) showReadOnly(parts.submitButton, parts.statusEl, state);
  parts.submitButton.addEventListener("click", submit);
  listenForKeys(submit, onKey);
}
