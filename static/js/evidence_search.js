/* An annotator's evidence search (the project's corpora and the web): ask, follow the search
 * job with follow.js's loop, and draw its results. Server text goes in as text only. */
import {api, el, isHttpUrl} from "./common.js";
import {followJob} from "./follow.js";

const POLL_MS = 700;

/*
 * Run a search for ``query`` into ``search`` ({query, state, results, problems, error}), calling
 * ``render()`` as it goes. A newer search in the same object replaces this one: its answers are
 * then dropped.
 */
export async function searchEvidence(search, {url, query, claim, render}) {
  if (!query) return;
  Object.assign(search, {query, state: "queued", results: [], problems: [], error: ""});
  render();
  const wanted = () => search.query === query;
  const searching = (answer) => answer.ok && !["done", "failed"].includes(answer.data.state) && wanted();
  let answer;
  try {
    answer = await api(url, "POST", {query, claim});
  } catch (networkError) {
    answer = {ok: false, data: {detail: "no connection to the server"}};
  }
  if (searching(answer)) {
    search.state = answer.data.state;
    render();
    await followJob({url: answer.data.url, every: POLL_MS, running: () => searching(answer), patience: 1,
      onAnswer: (data) => {
        answer = {ok: true, data};
        if (searching(answer)) { search.state = data.state; render(); }
      },
      onLost: (lost) => { answer = lost; }});
  }
  if (!wanted()) return;
  if (!answer.ok) {
    search.state = "failed";
    const detail = answer.data.detail || Object.values(answer.data).flat().join("; ");
    search.error = `The search did not run: ${detail || "error"}.`;
  } else {
    Object.assign(search, {state: answer.data.state, results: answer.data.results || [], problems: answer.data.problems || []});
  }
  render();
}

/* The search's status, problems and results, each result with an "Add as evidence" button
 * (``added(result)``: already among the annotator's evidence). */
export function searchResults(search, {added, readOnly, onAdd}) {
  const status = {queued: "Searching…", running: "Searching…"}[search.state];
  return [
    status ? el("p", {className: "hint", role: "status"}, status) : null,
    search.error ? el("p", {className: "error"}, search.error) : null,
    ...search.problems.map((p) => el("p", {className: "warning"}, p)),
    search.state === "done" && !search.results.length ? el("p", {className: "hint"}, `Nothing found for “${search.query}”.`) : null,
    search.results.length ? el("ol", {className: "fc2-results"}, search.results.map((result) => {
      const isAdded = added(result);
      return el("li", {className: "fc2-result"},
        el("div", {className: "fc2-passage-head"},
          result.url && isHttpUrl(result.url)
            ? el("a", {href: result.url, target: "_blank", rel: "noopener noreferrer", className: "fc2-title"}, result.title || result.url)
            : el("span", {className: "fc2-title"}, result.title || "untitled source"),
          el("span", {className: "badge fc2-source"}, result.source),
          el("span", {className: "spacer"}),
          readOnly ? null : el("button", {type: "button", className: "small fc2-add-result", disabled: isAdded,
            onclick: () => onAdd(result)}, isAdded ? "Added" : "Add as evidence")),
        el("blockquote", {className: "fc2-passage-text", tabindex: 0}, result.text));
    })) : null,
  ].filter(Boolean);
}
