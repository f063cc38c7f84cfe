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

/* A page's keys (state.keys: the keys of the fields its kind's completeness rules require, by
 * the field's path with list indexes as [], from the kind's page.py): keyOf(path) -> "s / n / i"
 * for "facts[3].label" (list indexes aside), or "" for a field without a key; choiceKeys(path)
 * -> the list of keys, one per entry of the field's label list, for withKeys. */
export function pageKeys(keys) {
  const entry = (path) => keys[path.replace(/\[\d+\]/g, "[]")];
  return {
    keyOf: (path) => { const value = entry(path); return Array.isArray(value) ? keysText(value) : value || ""; },
    choiceKeys: (path) => entry(path),
  };
}

/* A key legend written in a template: each <dt data-keys="path"> shows the keys of that field
 * from here, so the legend names the keys the page binds. */
export function showLegendKeys(keys) {
  const {keyOf} = pageKeys(keys);
  document.querySelectorAll("dt[data-keys]").forEach((dt) => { dt.textContent = keyOf(dt.dataset.keys); });
}
