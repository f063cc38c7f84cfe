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

/* Keys as a legend and the hints show them: ["s", "n", "A"] -> "s / n / ⇧A". */
export const keysText = (keys) => keys.map(keyName).join(" / ");

/* A legend line for a label list with keys: ["1 / 2 / 3", "what: yes / intermediate / no"]. */
export function legendLine(options, what) {
  return [keysText(options.map(([, , key]) => key)), `${what}: ${options.map(([, text]) => text.toLowerCase()).join(" / ")}`];
}

/* The keys of the fields a kind's completeness rules require (state.rules.completeness), per
 * page ("kind/step"), by the field's path with list indexes as []: every required field can be
 * reached from the keyboard (tests/project/test_js_modules.py checks the list is whole). A list
 * holds one key per entry of the field's label list (state.rules.choices), in the list's order:
 * the page binds those keys from here, so what it binds and what it shows never differ. A text
 * says how the field is reached. Written as JSON so the test can read it. */
export const REQUIRED_FIELD_KEYS = {
  "felm/1": {"segments[].label": ["c", "x"], "segments[].error_type": ["1", "2", "3", "4"], "segments[].comment": "r, then type"},
  "factcheck/1": {
    "sentences[].decontext": "d", "sentences[].importance": ["1", "2", "3"],
    "sentences[].checkworthy": ["y", "n", "O", "T", "H"],
    "sentences[].claims[].text": "Enter, then type", "sentences[].claims[].category": ["f", "o", "t", "h"],
    "sentences[].claims[].importance": ["q", "w", "e"]
  },
  "factcheck/2": {
    "stances[]": ["1", "2", "3", "4"], "reliable[]": ["r", "R"], "decided": ["d", "D"],
    "manual_evidence": "m", "manual_evidence[].text": "m, then type", "manual_evidence[].url": "m, then type",
    "manual_evidence[].reliable": ["r", "R"], "manual_evidence[].sufficient": ["a", "A"],
    "factuality": ["t", "f", "u"], "needs_edit": ["Y", "N", "U"], "correction": "c", "used_evidence": "g"
  },
  "factcheck/3": {"sentences[].revised": "Enter", "response": "r"},
  "dfactscore/1": {
    "individuals": "+", "groups[].link": "g, then 1–9", "groups[]": "1–9", "facts[].group": "1–9",
    "facts[].label": ["s", "n", "i"], "facts[].any_page": ["a", "A"], "facts[].entity": "e, then 1–9"
  }
};

/* A page's keys ("kind/step"): keyOf(path) -> "s / n / i" for "facts[3].label" (list indexes
 * aside), or "" for a field without a key; choiceKeys(path) -> the list of keys, for withKeys. */
export function pageKeys(page) {
  const keys = REQUIRED_FIELD_KEYS[page];
  const entry = (path) => keys[path.replace(/\[\d+\]/g, "[]")];
  return {
    keyOf: (path) => { const value = entry(path); return Array.isArray(value) ? keysText(value) : value || ""; },
    choiceKeys: (path) => entry(path),
  };
}

/* A key legend written in a template: each <dt data-keys="path"> shows the keys of that field
 * from here, so the legend names the keys the page binds. */
export function showLegendKeys(page) {
  const {keyOf} = pageKeys(page);
  document.querySelectorAll("dt[data-keys]").forEach((dt) => { dt.textContent = keyOf(dt.dataset.keys); });
}
