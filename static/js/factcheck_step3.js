/*
 * Factcheck-Bench step 3 (Wang et al., Figure 13; Appendix D.7): merge, deduplicate, revise.
 * Per sentence, in order: its claims as step 2 left them (original where true, corrected where
 * false, deleted ones struck through) and the revised sentence, pre-filled by the machine and
 * shown with a live word diff; then the whole revised response, with its diff and the word
 * overlap and normalised edit distance against the original. FactcheckStep3.start(state) drives
 * the annotator's page; start(state, {consolidation: true}) the consolidator's, where each
 * revision shows every annotator's to take.
 *
 * The DOM is built with el() (common.js) only: user text is always inserted as text.
 */
import * as common from "./common.js";
import {classes, el, theirBox} from "./common.js";
import {pageSaver} from "./save.js";
import {endPage, submitAndContinue} from "./ending.js";
import * as WordDiff from "./diff.js";
import {lacking} from "./completeness.js";

// How a claim came out of step 2, in the kind's words (state.rules, annotation/kinds/page_rules.py).
const {state: pageState, consolidation: consolidating} = common.pageState();
const VERDICT = Object.fromEntries(pageState.rules.choices.verdict);
const COMPLETENESS = pageState.rules.completeness;
const KEY_LEGEND = [
  ["j / ↓, k / ↑", "next / previous sentence"],
  ["Enter", "edit the selected sentence's revision"],
  ["o", "reset the selected sentence to the original"],
  ["r", "edit the whole revised response"],
  ["Esc", "leave a text field"],
  ["Ctrl+Enter", "submit"],
];

const normalise = (text) => (text || "").split(/\s+/).filter(Boolean).join(" ");
const joinRevised = (sentences) => sentences.map((s) => normalise(s.revised)).filter(Boolean).join(" ");

/* The paper's two measures, as pipeline/text_measures.py computes them (docs/measures.md). */
/* Normalised edit distance: character Levenshtein of the texts as given over the longer length. */
function editDistance(a, b) {
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
function wordOverlap(a, b) {
  const left = (a || "").split(/\s+/).filter(Boolean), right = (b || "").split(/\s+/).filter(Boolean);
  const [longer, shorter] = left.length >= right.length ? [left, right] : [right, left];
  if (!longer.length) return 1;
  const present = new Set(shorter);
  return longer.filter((token) => present.has(token)).length / longer.length;
}

function start(state, options = {}) {
  const consolidation = Boolean(options.consolidation);
  const readOnly = Boolean(state.read_only);
  const content = state.content.sentences || [];
  const sentences = content.map((_, i) => ({revised: (state.payload.sentences || [])[i]?.revised ?? null}));
  let response = state.payload.response ?? null;
  const {disagreed, annotations} = common.theirAnswers(state);
  // A consolidation starts from the revisions: the agreed one, or A's where they differ (marked).
  const startedFromA = new Set();
  if (consolidation && !state.read_only && annotations.length) {
    sentences.forEach((sentence, i) => {
      if (sentence.revised !== null) return;
      const theirs = annotations[0].payload.sentences?.[i]?.revised;
      if (typeof theirs === "string") { sentence.revised = theirs; startedFromA.add(i); }
    });
  }
  const original = state.response || content.map((s) => s.text).join(" ");
  const suggestion = state.suggestion || {};
  const listEl = document.getElementById("sentences");
  const parts = common.pageParts();
  const {editorEl, errorsEl, completenessEl, submitButton} = parts;
  let current = 0;
  let errors = [];
  let responseEdited = response !== null && response !== joinRevised(sentences);
  if (response === null && startedFromA.size) response = joinRevised(sentences);
  let joinNote = "";

  const saver = pageSaver({state, consolidation, payload: () => ({sentences, response}),
    onErrors: (list) => { errors = list; render(); }});

  /* What is still to do, by the kind's completeness rules (state.rules.completeness). */
  function missing() {
    return lacking(COMPLETENESS, {sentences, response}).map((lack) => (lack.index === undefined ? lack.name : `${lack.name} ${lack.index + 1}`));
  }

  function changed() {
    renderList();
    updateCompleteness();
    saver.schedule();
  }

  /* The response follows the sentences until the annotator edits it. */
  function setRevised(i, text, {rerender = true} = {}) {
    if (readOnly) return;
    sentences[i].revised = text;
    startedFromA.delete(i);
    joinNote = "";
    if (!responseEdited) response = joinRevised(sentences);
    if (rerender) render(); else { refreshDiffs(i); changed(); }
  }

  function setResponse(text, {rerender = true} = {}) {
    if (readOnly) return;
    response = text;
    responseEdited = true;
    if (rerender) render(); else { refreshResponse(); changed(); }
  }

  function select(i) {
    current = Math.max(0, Math.min(content.length - 1, i));
    listEl.querySelectorAll(".fc3-sentence").forEach((node, k) => node.classList.toggle("current", k === current));
    listEl.querySelectorAll(".fc3-sentence")[current]?.scrollIntoView({block: "nearest"});
  }

  function theirs(i, pick, value) {
    if (!consolidation) return null;
    const values = annotations.map((a) => (i === null ? a.payload.response : a.payload.sentences[i]?.revised) || "");
    const agreed = values.every((v) => normalise(v) === normalise(values[0]));
    return common.compareRow(annotations.map((a, k) => theirBox(a,
      el("div", {className: "fc-their-text"}, values[k] || "(removed)"),
      readOnly ? null : el("button", {type: "button", className: "small fc-use", onclick: () => pick(values[k])},
        `Use ${a.slot}`))), agreed, annotations.length);
  }

  function claimList(sentence) {
    if (!sentence.claims.length) return null;
    return el("ul", {className: "fc3-claims"}, sentence.claims.map((claim) => el("li", {className: `fc3-claim ${claim.verdict}`},
      claim.verdict === "false" ? [el("del", {}, claim.text), " → ", el("ins", {}, claim.corrected)]
        : claim.verdict === "deleted" ? el("del", {}, claim.text) : claim.text,
      " ", el("span", {className: `badge fc3-verdict ${claim.verdict}`}, VERDICT[claim.verdict] || claim.verdict))));
  }

  function refreshDiffs(i) {
    const node = listEl.querySelectorAll(".fc3-sentence")[i]?.querySelector(".fc3-diff");
    if (node) node.replaceChildren(WordDiff.render(content[i].decontext, sentences[i].revised || ""));
    refreshResponse();
  }

  function refreshResponse() {
    const field = editorEl.querySelector(".fc3-response");
    if (field && document.activeElement !== field) field.value = response ?? "";
    editorEl.querySelector(".fc3-response-diff")?.replaceChildren(WordDiff.render(original, response || ""));
    const figures = editorEl.querySelector(".fc3-figures");
    if (figures) {
      figures.textContent = `Against the original response: word overlap ${wordOverlap(original, response || "").toFixed(2)}, ` +
        `normalised edit distance ${editDistance(original, response || "").toFixed(2)}`;
    }
  }

  function renderList() {
    listEl.querySelectorAll(".fc3-sentence").forEach((node, i) => {
      node.classList.toggle("todo", sentences[i].revised === null);
      node.classList.toggle("invalid", errors.some((e) => (e.field || "").startsWith(`sentences[${i}]`)));
    });
  }

  function render() {
    errorsEl.replaceChildren(...errors.map((e) => el("li", {}, e.field ? `${e.field}: ${e.message}` : e.message)));
    listEl.replaceChildren(...content.map((sentence, i) => {
      const path = `sentences[${i}].revised`;
      const field = el("textarea", {
        className: classes("fc3-revised", disagreed.has(path) && consolidation && "disagree"), rows: 2,
        value: sentences[i].revised ?? "", disabled: readOnly, "aria-label": `Revised sentence ${i + 1}`,
        placeholder: sentences[i].revised === null ? "undecided: take an annotator's revision or write one" : "(removed)",
        onfocus: () => select(i),
        oninput: (event) => setRevised(i, event.target.value, {rerender: false}),
      });
      const hint = suggestion.sentences?.[i]?.revised;
      return el("li", {className: classes("fc3-sentence", i === current && "current", !sentence.checkworthy && "greyed")},
        el("div", {className: "fc3-original"}, el("span", {className: "fc3-label"}, `${i + 1}. `), sentence.decontext),
        sentence.decontext !== sentence.text ? el("div", {className: "fc2-why"}, `as written: ${sentence.text}`) : null,
        sentence.checkworthy ? claimList(sentence) : el("div", {className: "fc2-why"}, "not checkworthy: carried over unchanged"),
        field,
        startedFromA.has(i) ? el("p", {className: "fc3-from-a hint"},
          `Started from ${annotations[0].slot}'s revision: the annotators differ here — check it, or take another's (⇧${annotations.map((a) => a.slot).join(" / ⇧")}).`) : null,
        el("div", {className: "fc3-diff"}, WordDiff.render(sentence.decontext, sentences[i].revised || "")),
        readOnly ? null : el("span", {className: "fc3-tools"},
          el("button", {type: "button", className: "small", onclick: () => setRevised(i, sentence.decontext)}, "Original"),
          hint !== undefined && !consolidation
            ? el("button", {type: "button", className: "small", onclick: () => setRevised(i, hint)}, "Suggestion") : null,
          el("button", {type: "button", className: "small", onclick: () => setRevised(i, "")}, "Remove")),
        theirs(i, (v) => setRevised(i, v)));
    }));
    // (replaceChildren would write null as text: skip the absent parts)
    editorEl.replaceChildren(...[
      el("p", {className: "hint fc3-guideline"}, state.guideline || ""),
      el("h2", {}, "Revised response"),
      el("textarea", {className: classes("fc3-response", disagreed.has("response") && consolidation && "disagree"), rows: 8,
        value: response ?? "", disabled: readOnly, "aria-label": "Revised response",
        oninput: (event) => setResponse(event.target.value, {rerender: false})}),
      readOnly ? null : el("button", {type: "button", className: "small fc3-join", onclick: joinAgain},
        "Join the revised sentences again"),
      joinNote ? el("p", {className: "fc3-join-note hint", role: "status"}, joinNote) : null,
      el("p", {className: "fc3-figures hint"}),
      el("div", {className: "fc3-response-diff"}),
      theirs(null, (v) => setResponse(v)),
    ].filter(Boolean));
    refreshResponse();
    renderList();
    updateCompleteness();
  }

  /* The response from the revised sentences; what it leaves out is said, never silent. */
  function joinAgain() {
    const removed = [], undecided = [];
    sentences.forEach((s, i) => {
      if (s.revised === null) undecided.push(i + 1);
      else if (!normalise(s.revised)) removed.push(i + 1);
    });
    const list = (numbers) => `sentence${numbers.length > 1 ? "s" : ""} ${numbers.join(", ")}`;
    const parts = [removed.length && `${list(removed)} (removed)`,
      undecided.length && `${list(undecided)} (undecided: no revision yet — decide ${undecided.length > 1 ? "them" : "it"}, then join again)`]
      .filter(Boolean);
    joinNote = parts.length ? `Joined; left out: ${parts.join("; ")}.` : `Joined all ${sentences.length} revised sentences.`;
    responseEdited = false;
    setResponse(joinRevised(sentences));
    responseEdited = false;
  }

  function updateCompleteness() {
    const lacks = missing();
    completenessEl.textContent = lacks.length ? `still to do: ${lacks.join(", ")}` : "ready to submit";
    if (!readOnly) submitButton.setAttribute("aria-disabled", lacks.length ? "true" : "false");
  }

  async function submit() {
    if (readOnly) return;
    const lacks = missing();
    if (lacks.length) {
      errors = [{field: "", message: `still to do: ${lacks.join(", ")}`}];
      render();
      return;
    }
    await submitAndContinue(saver, submitButton, state.next_url);
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const focus = (selector) => () => { const f = selector(); if (f && !f.disabled) { f.focus(); } };
    const actions = {
      j: () => select(current + 1), ArrowDown: () => select(current + 1),
      k: () => select(current - 1), ArrowUp: () => select(current - 1),
      Enter: focus(() => listEl.querySelectorAll(".fc3-revised")[current]),
      r: focus(() => editorEl.querySelector(".fc3-response")),
      o: () => setRevised(current, content[current].decontext),
    };
    if (consolidation) {
      // ⇧A, ⇧B, ⇧C: take that rater's revision of the selected sentence
      annotations.forEach((a) => {
        actions[a.slot] = () => setRevised(current, a.payload.sentences?.[current]?.revised ?? "");
      });
    }
    const action = actions[event.key];
    if (action) { event.preventDefault(); action(); }
  }

  const legend = consolidation
    ? [...KEY_LEGEND.slice(0, 3),
      [annotations.map((a) => `⇧${a.slot}`).join(" / "), `take ${annotations.map((a) => `${a.slot}'s`).join(" / ")} revision of the selected sentence`],
      ...KEY_LEGEND.slice(3, -1), ["Ctrl+Enter", "save the gold record"]]
    : KEY_LEGEND;
  render();
  endPage({state, parts, submit, onKey, legend, consolidation});
}

start(pageState, {consolidation: consolidating});

