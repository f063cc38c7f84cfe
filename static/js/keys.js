/* The keys of the annotation pages: the shared bindings (Ctrl+Enter, Esc, typing stays in a
 * field) and the key legend each page shows. */
import {el, keyName} from "./common.js";

/*
 * The keys every page shares: Ctrl+Enter submits, Esc leaves a text field, and keys typed
 * into a field stay there. Other keys go to ``handle``.
 */
export function listenForKeys(submit, handle) {
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable;
    // A page form of its own (the discard form) keeps its keys: Ctrl+Enter there must not save gold.
    if (target.closest && target.closest("form")) return;
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") { event.preventDefault(); submit(); return; }
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    handle(event);
  });
}

/* The key legend (#keys): [[keys, what], ...]; a consolidator's Ctrl+Enter saves the gold record. */
export function showLegend(keysEl, legend, consolidation) {
  if (!keysEl) return;
  keysEl.replaceChildren(...legend.flatMap(([keys, what]) => [
    el("dt", {}, keys), el("dd", {}, consolidation && keys === "Ctrl+Enter" ? "save the gold record" : what)]));
}

// One column on a narrow screen: the key legend starts folded so the editor is not pushed down.
if (window.matchMedia("(max-width: 900px)").matches) {
  document.querySelectorAll("details.keys").forEach((legend) => { legend.open = false; });
}

/* A legend line for a label list with keys: ["1 / 2 / 3", "what: yes / intermediate / no"]. */
export function legendLine(options, what) {
  return [options.map(([, , key]) => keyName(key)).join(" / "), `${what}: ${options.map(([, text]) => text.toLowerCase()).join(" / ")}`];
}

/* The key that fills each field a kind's completeness rules require (state.rules.completeness),
 * per page ("kind/step"), by the field's path with list indexes as []: every required field can
 * be reached from the keyboard (tests/project/test_js_modules.py checks the list is whole).
 * Written as JSON so the test can read it. */
export const REQUIRED_FIELD_KEYS = {
  "factcheck/2": {
    "stances[]": "1 / 2 / 3 / 4", "reliable[]": "r / ⇧R", "decided": "d / ⇧D",
    "manual_evidence": "m", "manual_evidence[].text": "m, then type", "manual_evidence[].url": "m, then type",
    "manual_evidence[].reliable": "r / ⇧R", "manual_evidence[].sufficient": "a / ⇧A",
    "factuality": "t / f / u", "needs_edit": "⇧Y / ⇧N / ⇧U", "correction": "c", "used_evidence": "g"
  },
  "factcheck/3": {"sentences[].revised": "Enter", "response": "r"},
  "dfactscore/1": {
    "individuals": "+", "groups[].link": "g, then 1–9", "groups[]": "1–9", "facts[].group": "1–9",
    "facts[].label": "s / n / i", "facts[].any_page": "a / ⇧A", "facts[].entity": "e, then 1–9"
  }
};
