/*
 * Factcheck-Bench step 3 (Wang et al., Figure 13; Appendix D.7): merge, deduplicate, revise.
 * Per sentence, in order: its claims as step 2 left them (original where true, corrected where
 * false, deleted ones struck through) and the revised sentence, pre-filled by the machine and
 * shown with a live word diff; then the whole revised response, with its diff and the word
 * overlap and normalised edit distance against the original. FactcheckStep3.start(state) drives
 * the annotator's page; start(state, {consolidation: true}) the consolidator's, where each
 * revision shows every annotator's to take.
 *
 * The page's state is one object (`page`, made in start()); each region has its render function
 * and every change goes through changed(page), the page's one save hook.
 *
 * The DOM is built with el() (common.js) only: user text is always inserted as text.
 */
import * as common from "../js/common.js";
import {classes, el, theirBox} from "../js/common.js";
import {pageSaver} from "../js/save.js";
import {endPage, submitAndContinue} from "../js/ending.js";
import * as WordDiff from "../js/diff.js";
import {lacking} from "../js/completeness.js";
import {editDistance, joinNote, joinRevised, normalise, wordOverlap} from "./factcheck_step3_model.js";

// How a claim came out of step 2, in the kind's words (state.rules, annotation/kinds/factcheck/page.py).
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

/* What is still to do, by the kind's completeness rules (state.rules.completeness). */
function missing(page) {
  return lacking(COMPLETENESS, {sentences: page.sentences, response: page.response})
    .map((lack) => (lack.index === undefined ? lack.name : `${lack.name} ${lack.index + 1}`));
}

/* The one path of every change: redraw (all of it, or only what typing changes) and save. */
function changed(page, {rerender = true, typed = null} = {}) {
  if (rerender) render(page);
  else {
    if (typed !== null) refreshDiff(page, typed);
    refreshResponse(page);
    renderList(page);
    renderCompleteness(page);
  }
  page.saver.schedule();
}

/* The response follows the sentences until the annotator edits it. */
function setRevised(page, i, text, {rerender = true} = {}) {
  if (page.readOnly) return;
  page.sentences[i].revised = text;
  page.startedFromA.delete(i);
  page.joinNote = "";
  if (!page.responseEdited) page.response = joinRevised(page.sentences);
  changed(page, {rerender, typed: i});
}

function setResponse(page, text, {rerender = true} = {}) {
  if (page.readOnly) return;
  page.response = text;
  page.responseEdited = true;
  changed(page, {rerender});
}

/* The response from the revised sentences; what it leaves out is said, never silent. */
function joinAgain(page) {
  if (page.readOnly) return;
  page.joinNote = joinNote(page.sentences);
  page.response = joinRevised(page.sentences);
  page.responseEdited = false;
  changed(page);
}

function select(page, i) {
  page.current = Math.max(0, Math.min(page.content.length - 1, i));
  const nodes = page.listEl.querySelectorAll(".fc3-sentence");
  nodes.forEach((node, k) => node.classList.toggle("current", k === page.current));
  nodes[page.current]?.scrollIntoView({block: "nearest"});
}

/* Consolidation: every annotator's revision of sentence ``i`` (null: the response) to take. */
function theirs(page, i, pick) {
  if (!page.consolidation) return null;
  const {annotations} = page;
  const values = annotations.map((a) => (i === null ? a.payload.response : a.payload.sentences[i]?.revised) || "");
  const agreed = values.every((v) => normalise(v) === normalise(values[0]));
  return common.compareRow(annotations.map((a, k) => theirBox(a,
    el("div", {className: "fc-their-text"}, values[k] || "(removed)"),
    page.readOnly ? null : el("button", {type: "button", className: "small fc-use", onclick: () => pick(values[k])},
      `Use ${a.slot}`))), agreed, annotations.length);
}

function claimList(sentence) {
  if (!sentence.claims.length) return null;
  return el("ul", {className: "fc3-claims"}, sentence.claims.map((claim) => el("li", {className: `fc3-claim ${claim.verdict}`},
    claim.verdict === "false" ? [el("del", {}, claim.text), " → ", el("ins", {}, claim.corrected)]
      : claim.verdict === "deleted" ? el("del", {}, claim.text) : claim.text,
    " ", el("span", {className: `badge fc3-verdict ${claim.verdict}`}, VERDICT[claim.verdict] || claim.verdict))));
}

function refreshDiff(page, i) {
  const node = page.listEl.querySelectorAll(".fc3-sentence")[i]?.querySelector(".fc3-diff");
  if (node) node.replaceChildren(WordDiff.render(page.content[i].decontext, page.sentences[i].revised || ""));
}

/* The response's field (unless being typed in), its diff and its figures against the original. */
function refreshResponse(page) {
  const {editorEl} = page.parts;
  const response = page.response || "";
  const field = editorEl.querySelector(".fc3-response");
  if (field && document.activeElement !== field) field.value = page.response ?? "";
  editorEl.querySelector(".fc3-response-diff")?.replaceChildren(WordDiff.render(page.original, response));
  const figures = editorEl.querySelector(".fc3-figures");
  if (figures) {
    figures.textContent = `Against the original response: word overlap ${wordOverlap(page.original, response).toFixed(2)}, ` +
      `normalised edit distance ${editDistance(page.original, response).toFixed(2)}`;
  }
}

/* The sentences' marks: undecided, or named by an error. */
function renderList(page) {
  page.listEl.querySelectorAll(".fc3-sentence").forEach((node, i) => {
    node.classList.toggle("todo", page.sentences[i].revised === null);
    node.classList.toggle("invalid", page.errors.some((e) => (e.field || "").startsWith(`sentences[${i}]`)));
  });
}

function renderErrors(page) {
  page.parts.errorsEl.replaceChildren(...page.errors.map((e) => el("li", {}, e.field ? `${e.field}: ${e.message}` : e.message)));
}

function renderSentence(page, sentence, i) {
  const {annotations, consolidation, readOnly} = page;
  const revised = page.sentences[i].revised;
  const field = el("textarea", {
    className: classes("fc3-revised", page.disagreed.has(`sentences[${i}].revised`) && consolidation && "disagree"), rows: 2,
    value: revised ?? "", disabled: readOnly, "aria-label": `Revised sentence ${i + 1}`,
    placeholder: revised === null ? "undecided: take an annotator's revision or write one" : "(removed)",
    onfocus: () => select(page, i),
    oninput: (event) => setRevised(page, i, event.target.value, {rerender: false}),
  });
  const hint = page.suggestion.sentences?.[i]?.revised;
  return el("li", {className: classes("fc3-sentence", i === page.current && "current", !sentence.checkworthy && "greyed")},
    el("div", {className: "fc3-original"}, el("span", {className: "fc3-label"}, `${i + 1}. `), sentence.decontext),
    sentence.decontext !== sentence.text ? el("div", {className: "fc2-why"}, `as written: ${sentence.text}`) : null,
    sentence.checkworthy ? claimList(sentence) : el("div", {className: "fc2-why"}, "not checkworthy: carried over unchanged"),
    field,
    page.startedFromA.has(i) ? el("p", {className: "fc3-from-a hint"},
      `Started from ${annotations[0].slot}'s revision: the annotators differ here — check it, or take another's (⇧${annotations.map((a) => a.slot).join(" / ⇧")}).`) : null,
    el("div", {className: "fc3-diff"}, WordDiff.render(sentence.decontext, revised || "")),
    readOnly ? null : el("span", {className: "fc3-tools"},
      el("button", {type: "button", className: "small", onclick: () => setRevised(page, i, sentence.decontext)}, "Original"),
      hint !== undefined && !consolidation
        ? el("button", {type: "button", className: "small", onclick: () => setRevised(page, i, hint)}, "Suggestion") : null,
      el("button", {type: "button", className: "small", onclick: () => setRevised(page, i, "")}, "Remove")),
    theirs(page, i, (v) => setRevised(page, i, v)));
}

function renderSentences(page) {
  page.listEl.replaceChildren(...page.content.map((sentence, i) => renderSentence(page, sentence, i)));
}

function renderResponseEditor(page) {
  const {consolidation, readOnly} = page;
  // (replaceChildren would write null as text: skip the absent parts)
  page.parts.editorEl.replaceChildren(...[
    el("p", {className: "hint fc3-guideline"}, page.state.guideline || ""),
    el("h2", {}, "Revised response"),
    el("textarea", {className: classes("fc3-response", page.disagreed.has("response") && consolidation && "disagree"), rows: 8,
      value: page.response ?? "", disabled: readOnly, "aria-label": "Revised response",
      oninput: (event) => setResponse(page, event.target.value, {rerender: false})}),
    readOnly ? null : el("button", {type: "button", className: "small fc3-join", onclick: () => joinAgain(page)},
      "Join the revised sentences again"),
    page.joinNote ? el("p", {className: "fc3-join-note hint", role: "status"}, page.joinNote) : null,
    el("p", {className: "fc3-figures hint"}),
    el("div", {className: "fc3-response-diff"}),
    theirs(page, null, (v) => setResponse(page, v)),
  ].filter(Boolean));
  refreshResponse(page);
}

function renderCompleteness(page) {
  const lacks = missing(page);
  page.parts.completenessEl.textContent = lacks.length ? `still to do: ${lacks.join(", ")}` : "ready to submit";
  if (!page.readOnly) page.parts.submitButton.setAttribute("aria-disabled", lacks.length ? "true" : "false");
}

function render(page) {
  renderErrors(page);
  renderSentences(page);
  renderResponseEditor(page);
  renderList(page);
  renderCompleteness(page);
}

async function submit(page) {
  if (page.readOnly) return;
  const lacks = missing(page);
  if (lacks.length) {
    page.errors = [{field: "", message: `still to do: ${lacks.join(", ")}`}];
    render(page);
    return;
  }
  await submitAndContinue(page.saver, page.parts.submitButton, page.state.next_url);
}

function onKey(page, event) {
  if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
  const focus = (selector) => () => { const f = selector(); if (f && !f.disabled) { f.focus(); } };
  const actions = {
    j: () => select(page, page.current + 1), ArrowDown: () => select(page, page.current + 1),
    k: () => select(page, page.current - 1), ArrowUp: () => select(page, page.current - 1),
    Enter: focus(() => page.listEl.querySelectorAll(".fc3-revised")[page.current]),
    r: focus(() => page.parts.editorEl.querySelector(".fc3-response")),
    o: () => setRevised(page, page.current, page.content[page.current].decontext),
  };
  if (page.consolidation) {
    // ⇧A, ⇧B, ⇧C: take that rater's revision of the selected sentence
    page.annotations.forEach((a) => {
      actions[a.slot] = () => setRevised(page, page.current, a.payload.sentences?.[page.current]?.revised ?? "");
    });
  }
  const action = actions[event.key];
  if (action) { event.preventDefault(); action(); }
}

function keyLegend(page) {
  if (!page.consolidation) return KEY_LEGEND;
  const slots = page.annotations.map((a) => a.slot);
  return [...KEY_LEGEND.slice(0, 3),
    [slots.map((slot) => `⇧${slot}`).join(" / "), `take ${slots.map((slot) => `${slot}'s`).join(" / ")} revision of the selected sentence`],
    ...KEY_LEGEND.slice(3, -1), ["Ctrl+Enter", "save the gold record"]];
}

/* The page's state, in one object: what the annotator decides and what the page shows. */
function pageModel(state, consolidation) {
  const content = state.content.sentences || [];
  const sentences = content.map((_, i) => ({revised: (state.payload.sentences || [])[i]?.revised ?? null}));
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
  let response = state.payload.response ?? null;
  const responseEdited = response !== null && response !== joinRevised(sentences);
  if (response === null && startedFromA.size) response = joinRevised(sentences);
  return {
    state, consolidation, readOnly: Boolean(state.read_only), content, sentences, response, responseEdited,
    disagreed, annotations, startedFromA,
    original: state.response || content.map((s) => s.text).join(" "),
    suggestion: state.suggestion || {},
    listEl: document.getElementById("sentences"), parts: common.pageParts(),
    current: 0, errors: [], joinNote: "", saver: null,
  };
}

function start(state, options = {}) {
  const page = pageModel(state, Boolean(options.consolidation));
  page.saver = pageSaver({state, consolidation: page.consolidation,
    payload: () => ({sentences: page.sentences, response: page.response}),
    onErrors: (list) => { page.errors = list; render(page); }});
  render(page);
  endPage({state, parts: page.parts, submit: () => submit(page), onKey: (event) => onKey(page, event),
    legend: keyLegend(page), consolidation: page.consolidation});
}

start(pageState, {consolidation: consolidating});
