/*
 * Factcheck-Bench step 2 (Wang et al., Figure 12; Appendix D.4–D.6): for each checkworthy
 * factual claim, the stance of every evidence passage and whether its source is reliable,
 * whether the evidence decides the claim, evidence the annotator searched for, the claim's
 * factuality and its correction. start(state) drives the annotator's page;
 * start(state, {consolidation: true}) the consolidator's, where every field shows each
 * annotator's answer to take.
 *
 * The DOM is built with el() (common.js) only: user text and passages are always inserted as text.
 */
import * as common from "../js/common.js";
import {classes, el, isHttpUrl, labelOf, suggested, theirBox, withKeys} from "../js/common.js";
import {pageSaver} from "../js/save.js";
import {endPage, submitAndContinue} from "../js/ending.js";
import {legendLine, pageKeys} from "../js/keys.js";
import {lacksInWords} from "../js/completeness.js";
import * as WordDiff from "../js/diff.js";
import {searchEvidence, searchResults} from "../js/evidence_search.js";
import {MANUAL, USES_IT, blankClaim, blankManual, normalise, plural, readablePath, usedInRows, usedLabel, usedWithoutManual} from "./factcheck_step2_model.js";

// The page state, with the kind's label lists (state.rules, annotation/kinds/factcheck/page.py);
// the page adds a key to each entry, in list order.
const {state: pageState, consolidation: consolidating} = common.pageState();
const RULES = pageState.rules.choices;
const {choiceKeys, keyOf} = pageKeys(pageState.keys);  // state.keys, from page.py
const STANCES = withKeys(RULES.stance, choiceKeys("stances[]"));
const RELIABLE = withKeys(RULES.reliable, choiceKeys("reliable[]"));
const DECIDED = withKeys(RULES.decided, choiceKeys("decided"));
const FACTUALITY = withKeys(RULES.factuality, choiceKeys("factuality"));
const NEEDS_EDIT = withKeys(RULES.needs_edit, choiceKeys("needs_edit"));
// The annotator's own evidence: the same reliability keys as a passage, and a / ⇧A for "sufficient alone".
const MANUAL_RELIABLE = withKeys(RULES.manual_reliable, choiceKeys("manual_evidence[].reliable"));
const SUFFICIENT = withKeys(RULES.sufficient, choiceKeys("manual_evidence[].sufficient"));
// Factuality follows the edit decision in every released claim (server rule 6): one sets the other.
const FACTUALITY_FOR_EDIT = pageState.rules.factuality_for_edit;
const COMPLETENESS = pageState.rules.completeness;
const EDIT_FOR_FACTUALITY = Object.fromEntries(Object.entries(FACTUALITY_FOR_EDIT).map(([edit, factuality]) => [factuality, edit]));

const KEY_LEGEND = [
  ["] / [", "next / previous claim"],
  ["j / ↓, k / ↑", "next / previous passage (then your own evidence)"],
  legendLine(STANCES, "stance of the passage"),
  [keyOf("reliable[]"), "the passage's (or your evidence's) source is reliable / not reliable"],
  [keyOf("manual_evidence[].sufficient"), "your evidence is sufficient alone: yes / no"],
  ["g", "the correction uses this passage or evidence (or not)"],
  legendLine(DECIDED, "the evidence decides the claim"),
  [keyOf("factuality"), "the claim is true / false / unknown"],
  legendLine(NEEDS_EDIT, "needs an edit"),
  ["s", "search for evidence"],
  ["m", "add evidence by hand (paste text and URL)"],
  ["c", "edit the correction (the pre-filled claim is selected: type to replace it, ← / → to edit it)"],
  ["Esc", "leave a text field"],
  ["Ctrl+Enter", "submit"],
];

/* The page's one state object: what the server sent, the answers, and where the annotator is. */
function createPage(state, options) {
  const claims = state.content.claims || [];
  const {disagreed, annotations, alignment} = common.theirAnswers(state);
  return {
    state, claims, disagreed, annotations, alignment,
    consolidation: Boolean(options.consolidation),
    readOnly: Boolean(state.read_only),
    answers: claims.map((claim, i) => blankClaim(claim, (state.payload.claims || [])[i])),
    provenance: state.provenance || {},
    previous: state.previous || null,
    listEl: document.getElementById("claims"),
    parts: common.pageParts(),
    current: 0,
    passageCursor: claims.map(() => 0),
    searches: claims.map(() => ({query: "", state: null, results: [], problems: [], error: ""})),
    errors: [],
    saver: null,
  };
}

const choices = (page, options, value, onPick, settings = {}) => common.choices(options, value, onPick, {...settings, readOnly: page.readOnly});

// -- changes ---------------------------------------------------------------------------

/* Every change to an answer ends here: redraw what it touches, then the one save hook. */
function changed(page, {rerender = true} = {}) {
  if (rerender) renderEditor(page, page.parts.editorEl);
  renderList(page, page.listEl);
  updateCompleteness(page);
  page.saver.schedule();
}

function setAnswer(page, patch) {
  if (page.readOnly) return;
  const answer = page.answers[page.current];
  Object.assign(answer, patch);
  if ("needs_edit" in patch && patch.needs_edit) answer.factuality = FACTUALITY_FOR_EDIT[patch.needs_edit];
  if ("factuality" in patch && patch.factuality) answer.needs_edit = EDIT_FOR_FACTUALITY[patch.factuality];
  changed(page);
}

function setPassage(page, k, field, value) {
  const answer = page.answers[page.current];
  if (page.readOnly || k < 0 || k >= answer.stances.length) return;
  page.passageCursor[page.current] = k;
  answer[field][k] = value;
  changed(page);
}

function toggleUsed(page, value) {
  if (page.readOnly) return;
  const used = page.answers[page.current].used_evidence;
  const at = used.indexOf(value);
  if (at >= 0) used.splice(at, 1); else used.push(value);
  changed(page);
}

function addManual(page, entry = {}, {focus = true} = {}) {
  if (page.readOnly) return;
  const answer = page.answers[page.current];
  answer.manual_evidence.push(blankManual(entry));
  page.passageCursor[page.current] = answer.stances.length + answer.manual_evidence.length - 1;
  changed(page);
  if (focus) {
    const fields = page.parts.editorEl.querySelectorAll(".fc2-manual");
    const last = fields[fields.length - 1];
    last?.querySelector(entry.text ? ".fc2-manual-url" : ".fc2-manual-text")?.focus();
    last?.scrollIntoView({block: "nearest"});
  }
}

function removeManual(page, index) {
  const answer = page.answers[page.current];
  if (page.readOnly) return;
  answer.manual_evidence.splice(index, 1);
  const cursor = page.passageCursor[page.current];
  page.passageCursor[page.current] = Math.max(0, Math.min(cursor, answer.stances.length + answer.manual_evidence.length - 1));
  answer.used_evidence = usedWithoutManual(answer.used_evidence, index);
  changed(page);
}

function setManual(page, m, patch) {
  const entry = page.answers[page.current].manual_evidence[m];
  if (page.readOnly || !entry) return;
  Object.assign(entry, patch);
  changed(page);
}

// -- search ----------------------------------------------------------------------------

async function runSearch(page, index, query) {
  await searchEvidence(page.searches[index], {url: page.state.search_url, query: normalise(query),
    claim: page.claims[index].text, render: () => renderSearch(page)});
}

function focusSearch(page) {
  const field = page.parts.editorEl.querySelector(".fc2-search-query");
  field?.focus();
  field?.select();
}

// -- navigation ------------------------------------------------------------------------

function select(page, index) {
  if (!page.claims.length) return;
  const next = Math.max(0, Math.min(page.claims.length - 1, index));
  const moved = next !== page.current;
  page.current = next;
  renderEditor(page, page.parts.editorEl);
  renderList(page, page.listEl);
  page.listEl.querySelector(`[data-claim="${page.current}"]`)?.scrollIntoView({block: "nearest"});
  if (moved) page.parts.editorEl.scrollIntoView({block: "start"});
}

/* The cursor runs over the retrieved passages, then the annotator's own evidence. */
function selectPassage(page, k) {
  const answer = page.answers[page.current];
  const count = answer.stances.length + answer.manual_evidence.length;
  if (!count) return;
  page.passageCursor[page.current] = Math.max(0, Math.min(count - 1, k));
  const nodes = page.parts.editorEl.querySelectorAll(".fc2-passages > .fc2-passage, .fc2-manuals > .fc2-manual");
  nodes.forEach((node, r) => node.classList.toggle("current", r === page.passageCursor[page.current]));
  nodes[page.passageCursor[page.current]]?.scrollIntoView({block: "nearest"});
}

/* Under the cursor: ["passage", k] or ["manual", m]. */
function underCursor(page) {
  const k = page.passageCursor[page.current];
  const passages = page.answers[page.current].stances.length;
  return k < passages ? ["passage", k] : ["manual", k - passages];
}

function focusCorrection(page) {
  const field = page.parts.editorEl.querySelector(".fc2-correction");
  if (!field || field.disabled) return;
  field.focus();
  // Still the pre-filled claim: selected, so typing replaces it (← / → to edit it instead).
  if (field.value === (page.claims[page.current] || {}).text) field.select();
  else field.setSelectionRange(field.value.length, field.value.length);
}

// -- consolidation ---------------------------------------------------------------------

const theirClaim = (page, annotation) => (annotation.payload.claims || [])[page.current] || {};
const isDisagreed = (page, path) => page.consolidation && page.disagreed.has(path);

/* Compact "A: Refutes · B: Irrelevant" buttons: a click takes that annotator's answer. */
function theirValues(page, values, show, pick) {
  if (!page.consolidation) return null;
  const agreed = values.every((v) => JSON.stringify(v) === JSON.stringify(values[0]));
  return el("div", {className: classes("fc2-theirs", agreed && "agreed")},
    page.annotations.map((annotation, k) => el("button", {
      type: "button", className: "small fc-use", "data-slot": annotation.slot, disabled: page.readOnly,
      title: `use ${annotation.annotator}'s answer${annotation.role === "third_rater" ? " (third rater)" : ""}`,
      onclick: () => pick(values[k]),
    }, `${annotation.slot}: ${show(values[k])}`)));
}

/* An annotator's used evidence in the consolidation's numbering of manual evidence. */
function theirUsed(page, annotationIndex) {
  return usedInRows(theirClaim(page, page.annotations[annotationIndex]).used_evidence || [],
    page.alignment[page.current] || [], annotationIndex);
}

function manualSources(page, row) {
  const rows = page.alignment[page.current] || [];
  if (!page.consolidation || !rows[row]) return null;
  const from = page.annotations.filter((_, k) => rows[row][k] !== null && rows[row][k] !== undefined).map((a) => a.slot);
  return el("span", {className: "fc2-from"}, from.length ? `given by ${from.join(", ")}` : "added here");
}

// -- rendering -------------------------------------------------------------------------

function errorsAt(page, path) {
  return page.errors.filter((e) => e.field === path || (e.field || "").startsWith(`${path}.`) || (e.field || "").startsWith(`${path}[`));
}
const invalid = (page, path) => page.errors.some((e) => e.field === path);

/* The response's sentences in order, each with its claims; the claims step 2 does not check are grey. */
function renderList(page, listEl) {
  const {claims, answers, current, previous} = page;
  const byPosition = new Map(claims.map((c, i) => [`${c.sentence}/${c.claim}`, i]));
  const claimButton = (i) => {
    const done = !lacksInWords(COMPLETENESS, answers[i]).length;
    const disputes = page.consolidation ? [...page.disagreed].filter((p) => p.startsWith(`claims[${i}].`) || p.startsWith(`claims[${i}]`)).length : 0;
    return el("li", {className: classes("fc2-claim-item", done ? "done" : "todo", i === current && "current",
      errorsAt(page, `claims[${i}]`).length && "invalid")},
      el("button", {type: "button", className: "fc2-claim-pick", "data-claim": i, "aria-current": i === current ? "true" : null,
        onclick: () => select(page, i)},
        el("span", {className: "fc2-claim-text"}, claims[i].text),
        el("span", {className: "fc-sentence-meta"},
          el("span", {className: `badge fc-state ${done ? "done" : "todo"}`}, done ? "done" : "todo"),
          ` ${plural(claims[i].evidence.length, "passage")}`,
          disputes ? el("span", {className: "badge fc-disputes"}, plural(disputes, "disagreement")) : null)));
  };
  const sentences = previous?.gold?.sentences;
  if (!Array.isArray(sentences)) {
    listEl.replaceChildren(el("li", {}, el("ol", {className: "fc2-claim-list"}, claims.map((_, i) => claimButton(i)))));
    return;
  }
  const texts = previous.content?.sentences || [];
  listEl.replaceChildren(...sentences.map((sentence, s) => {
    const checkworthy = sentence.checkworthy === "yes";
    return el("li", {className: classes("fc2-sentence", !checkworthy && "greyed")},
      el("div", {className: "fc2-sentence-text"}, sentence.decontext || texts[s] || ""),
      checkworthy ? null : el("div", {className: "fc2-why"}, `not checked: sentence not checkworthy (${sentence.checkworthy || "–"})`),
      (sentence.claims || []).length ? el("ol", {className: "fc2-claim-list"}, (sentence.claims || []).map((claim, c) => {
        const index = byPosition.get(`${s}/${c}`);
        if (index !== undefined) return claimButton(index);
        return el("li", {className: "fc2-claim-item greyed"},
          el("span", {className: "fc2-claim-text"}, claim.text),
          el("span", {className: "fc2-why"}, checkworthy ? ` not checked: ${claim.category || "not factual"}` : ""));
      })) : null);
  }));
}

function updateCompleteness(page) {
  const done = page.answers.filter((answer) => !lacksInWords(COMPLETENESS, answer).length).length;
  common.showProgress(page.parts, {done, total: page.claims.length, unit: "claim", readOnly: page.readOnly});
  const node = page.parts.editorEl.querySelector(".fc-missing");
  if (node) fillMissing(page, node);
}

function fillMissing(page, node) {
  if (!page.claims.length) return;
  common.showLacks(node, lacksInWords(COMPLETENESS, page.answers[page.current]), "claim");
}

function renderErrors(page, errorsEl) {
  errorsEl.replaceChildren(...page.errors.map((e) => el("li", {}, e.field ? `${readablePath(e.field)}: ${e.message}` : e.message)));
}

function stanceHint(page, passage) {
  const hint = passage.stance_hint;
  if (!hint || !hint.label) return null;
  const by = page.provenance.stance?.model || page.provenance.llm?.model || "the model";
  return suggested(hint.label, (v) => labelOf(STANCES, v), `suggested by ${by}: not selected for you`);
}

function renderPassage(page, passage, k) {
  const answer = page.answers[page.current];
  const path = `claims[${page.current}]`;
  const usedOn = answer.used_evidence.includes(k);
  const title = passage.title || passage.url || "untitled source";
  const pickPassage = (field) => (v) => setPassage(page, k, field, v);
  return el("li", {className: classes("fc2-passage", k === page.passageCursor[page.current] && "current"), "data-index": k,
    onclick: () => selectPassage(page, k)},
    el("div", {className: "fc2-passage-head"},
      el("span", {className: "fc2-rank"}, `${k + 1}.`),
      passage.url && isHttpUrl(passage.url)
        ? el("a", {href: passage.url, target: "_blank", rel: "noopener noreferrer", className: "fc2-title"}, title)
        : el("span", {className: "fc2-title"}, title),
      el("span", {className: "badge fc2-source"}, passage.source || "evidence"),
      passage.query ? el("span", {className: "fc2-query"}, `found by “${passage.query}”`) : null),
    el("blockquote", {className: "fc2-passage-text", tabindex: 0}, passage.text),
    el("div", {className: "fc-choice-line"},
      el("span", {className: "fc-choice-label"}, "Stance"),
      choices(page, STANCES, answer.stances[k], pickPassage("stances"),
        {className: "fc2-stance", disagree: isDisagreed(page, `${path}.stances[${k}]`), invalid: invalid(page, `${path}.stances[${k}]`)}),
      page.consolidation ? null : stanceHint(page, passage)),
    theirValues(page, page.annotations.map((a) => (theirClaim(page, a).stances || [])[k] ?? null), (v) => labelOf(STANCES, v),
      pickPassage("stances")),
    el("div", {className: "fc-choice-line"},
      el("span", {className: "fc-choice-label"}, "Source"),
      choices(page, RELIABLE, answer.reliable[k], pickPassage("reliable"),
        {className: "fc2-reliable", disagree: isDisagreed(page, `${path}.reliable[${k}]`), invalid: invalid(page, `${path}.reliable[${k}]`)}),
      el("label", {className: "fc2-used"},
        el("input", {type: "checkbox", checked: usedOn, disabled: page.readOnly, onchange: () => toggleUsed(page, k)}),
        " correction uses it ", el("kbd", {}, "g"))),
    theirValues(page, page.annotations.map((a) => (theirClaim(page, a).reliable || [])[k] ?? null), (v) => labelOf(RELIABLE, v),
      pickPassage("reliable")));
}

function renderManual(page, entry, m) {
  const {readOnly} = page;
  const path = `claims[${page.current}].manual_evidence[${m}]`;
  const value = `${MANUAL}${m}`;
  const set = (patch, rerender = true) => { if (readOnly) return; Object.assign(entry, patch); changed(page, {rerender}); };
  const input = (key, attrs) => el(attrs.tag || "input", {
    ...attrs, tag: null, value: entry[key], disabled: readOnly,
    className: classes(attrs.className, invalid(page, `${path}.${key}`) && "invalid"),
    oninput: (event) => set({[key]: event.target.value}, false),
  });
  const at = page.answers[page.current].stances.length + m;
  return el("li", {className: classes("fc2-manual", isDisagreed(page, path) && "disagree", at === page.passageCursor[page.current] && "current"),
    onclick: () => selectPassage(page, at)},
    el("div", {className: "fc2-passage-head"},
      el("span", {className: "fc2-rank"}, `Your evidence ${m + 1}`),
      manualSources(page, m),
      el("span", {className: "spacer"}),
      readOnly ? null : el("button", {type: "button", className: "small fc-remove", onclick: () => removeManual(page, m)}, "Remove")),
    input("text", {tag: "textarea", rows: 3, className: "fc2-manual-text", "aria-label": `Your evidence ${m + 1}, text`,
      placeholder: "the passage that is evidence, quoted"}),
    el("div", {className: "fc2-manual-fields"},
      el("label", {}, "URL ", input("url", {type: "url", className: "fc2-manual-url", placeholder: "https://…"})),
      el("label", {}, "Query ", input("query", {type: "text", className: "fc2-manual-query", placeholder: "what you searched for"}))),
    el("div", {className: "fc-choice-line"},
      el("span", {className: "fc-choice-label"}, "Reliable"),
      choices(page, MANUAL_RELIABLE, entry.reliable, (v) => set({reliable: v}),
        {className: "fc2-manual-reliable", disagree: isDisagreed(page, `${path}.reliable`), invalid: invalid(page, `${path}.reliable`)}),
      el("span", {className: "fc-choice-label"}, "Sufficient alone"),
      choices(page, SUFFICIENT, entry.sufficient, (v) => set({sufficient: v}),
        {className: "fc2-manual-sufficient", disagree: isDisagreed(page, `${path}.sufficient`), invalid: invalid(page, `${path}.sufficient`)}),
      el("label", {className: "fc2-used"},
        el("input", {type: "checkbox", checked: page.answers[page.current].used_evidence.includes(value), disabled: readOnly,
          onchange: () => toggleUsed(page, value)}), ` ${USES_IT}`)));
}

function renderSearch(page) {
  const box = page.parts.editorEl.querySelector(".fc2-search-results");
  if (!box) return;
  const search = page.searches[page.current];
  const known = new Set(page.answers[page.current].manual_evidence.map((m) => `${m.url} ${normalise(m.text)}`));
  box.replaceChildren(...searchResults(search, {
    added: (result) => known.has(`${result.url} ${normalise(result.text)}`), readOnly: page.readOnly,
    onAdd: (result) => { addManual(page, {text: result.text, url: result.url, query: search.query}, {focus: false}); renderSearch(page); },
  }));
}

function verdictField(page, key, title, options) {
  const path = `claims[${page.current}].${key}`;
  const pick = (v) => setAnswer(page, {[key]: v});
  return el("div", {className: classes("fc-field", isDisagreed(page, path) && "disagree")},
    el("div", {className: "fc-choice-line"},
      el("span", {className: "fc-field-label"}, title),
      choices(page, options, page.answers[page.current][key], pick, {className: `fc2-${key}`, invalid: invalid(page, path)})),
    theirValues(page, page.annotations.map((a) => theirClaim(page, a)[key] ?? null), (v) => labelOf(options, v), pick));
}

/* The claim, its sources and how it was retrieved. */
function claimHead(page, claim) {
  const {previous, provenance} = page;
  const sentenceText = previous?.gold?.sentences?.[claim.sentence]?.decontext || previous?.content?.sentences?.[claim.sentence];
  const queries = claim.queries?.queries || claim.queries || [];
  const hintCount = claim.evidence.filter((p) => p.stance_hint && p.stance_hint.label).length;
  return [
    el("div", {className: "fc-editor-head"},
      el("h2", {}, `Claim ${page.current + 1} `, el("small", {}, `of ${page.claims.length} · sentence ${claim.sentence + 1}`))),
    sentenceText ? el("p", {className: "fc2-context"}, "Sentence: ", sentenceText) : null,
    el("blockquote", {className: "fc-original fc2-claim"}, claim.text),
    el("p", {className: "fc-provenance"},
      claim.evidence.length ? `${plural(claim.evidence.length, "passage")} ranked` : "No evidence was retrieved",
      queries.length ? ` for the queries ${queries.map((q) => `“${q}”`).join(", ")}` : "",
      hintCount && !page.consolidation ? ". Stance suggestions are shown beside the choices, never selected." : ".",
      provenance.evidence?.sources?.length ? ` Sources: ${provenance.evidence.sources.join(", ")}.` : ""),
    ...(claim.problems || []).map((problem) => el("p", {className: "warning"}, problem)),
  ];
}

function searchSection(page, claim) {
  const search = page.searches[page.current];
  return el("section", {className: "fc2-search"},
    el("h3", {}, "Search for evidence ", el("kbd", {}, "s")),
    el("form", {className: "fc2-search-form", onsubmit: (event) => {
      event.preventDefault();
      runSearch(page, page.current, event.target.elements.query.value);
    }},
    el("input", {type: "search", name: "query", className: "fc2-search-query", value: search.query || claim.text,
      "aria-label": "search query", placeholder: "search the project's corpora and the web",
      oninput: (event) => { search.query = event.target.value; }}),
    el("button", {type: "submit"}, "Search")),
    el("div", {className: "fc2-search-results"}));
}

function correctionField(page, claim, answer, path) {
  const {annotations, readOnly} = page;
  const diffEl = el("div", {className: "fc2-diff"}, WordDiff.render(claim.text, answer.correction));
  const correction = el("textarea", {
    className: classes("fc2-correction", invalid(page, `${path}.correction`) && "invalid", isDisagreed(page, `${path}.correction`) && "disagree"),
    rows: 2, value: answer.correction, disabled: readOnly, id: "fc2-correction",
    oninput: (event) => {
      answer.correction = event.target.value;
      diffEl.replaceChildren(WordDiff.render(claim.text, answer.correction));
      changed(page, {rerender: false});
    },
  });
  return el("div", {className: classes("fc-field", isDisagreed(page, `${path}.correction`) && "disagree")},
    el("label", {className: "fc-field-label", for: "fc2-correction"}, "Corrected claim ", el("kbd", {}, "c")),
    correction,
    diffEl,
    page.consolidation ? common.compareRow(annotations.map((a) => theirBox(a,
      el("div", {className: "fc-their-text"}, theirClaim(page, a).correction || "(empty)"),
      readOnly ? null : el("button", {type: "button", className: "small fc-use",
        onclick: () => setAnswer(page, {correction: theirClaim(page, a).correction || ""})}, `Use ${a.slot}`))),
    annotations.every((a) => normalise(theirClaim(page, a).correction) === normalise(theirClaim(page, annotations[0]).correction)),
    annotations.length) : null);
}

function usedSummary(page, answer, path) {
  return el("div", {className: classes("fc-field fc2-used-summary", isDisagreed(page, `${path}.used_evidence`) && "disagree",
    invalid(page, `${path}.used_evidence`) && "invalid")},
    el("span", {className: "fc-field-label"}, "The correction uses "),
    answer.used_evidence.length ? answer.used_evidence.map(usedLabel).join(", ")
      : el("span", {className: "hint"}, "nothing yet: tick “correction uses it” on the evidence"),
    theirValues(page, page.annotations.map((_, k) => theirUsed(page, k)), (v) => (v.length ? v.map(usedLabel).join(", ") : "none"),
      (v) => setAnswer(page, {used_evidence: [...v].filter((x) => typeof x !== "string"
        || Number(x.slice(MANUAL.length)) < page.answers[page.current].manual_evidence.length)})));
}

/* The current claim's editor: evidence, verdicts, search, own evidence, correction. */
function renderEditor(page, editorEl) {
  if (!page.claims.length) return;
  const claim = page.claims[page.current];
  const answer = page.answers[page.current];
  const path = `claims[${page.current}]`;
  editorEl.replaceChildren(...[
    ...claimHead(page, claim),
    el("p", {className: "fc-missing", role: "status"}),

    el("section", {className: "fc2-evidence"},
      el("h3", {}, "Evidence"),
      claim.evidence.length ? el("ol", {className: "fc2-passages"}, claim.evidence.map((passage, k) => renderPassage(page, passage, k)))
        : el("p", {className: "hint"}, "No passage to judge: search below or add the evidence you find.")),

    verdictField(page, "decided", "Can the claim be decided from this evidence?", DECIDED),
    searchSection(page, claim),

    el("section", {className: classes("fc2-manual-section", isDisagreed(page, `${path}.manual_evidence`) && "disagree")},
      el("h3", {}, "Evidence you found ", el("small", {}, "query, URL, reliable, sufficient alone (Appendix D.4)")),
      answer.manual_evidence.length ? el("ol", {className: "fc2-manuals"}, answer.manual_evidence.map((entry, m) => renderManual(page, entry, m))) : null,
      page.readOnly ? null : el("button", {type: "button", className: "fc2-add-manual", onclick: () => addManual(page)},
        "Add evidence by hand ", el("kbd", {}, "m"))),

    verdictField(page, "factuality", "The claim is", FACTUALITY),
    verdictField(page, "needs_edit", "Needs an edit", NEEDS_EDIT),
    correctionField(page, claim, answer, path),
    usedSummary(page, answer, path),
  ].filter(Boolean));
  fillMissing(page, editorEl.querySelector(".fc-missing"));
  renderSearch(page);
}

/* The whole page from its state. */
function render(page) {
  const {editorEl, errorsEl} = page.parts;
  if (page.claims.length) renderEditor(page, editorEl);
  else editorEl.replaceChildren(el("p", {className: "hint"}, "This item has no checkworthy factual claim to verify: submit to confirm."));
  renderErrors(page, errorsEl);
  renderList(page, page.listEl);
  updateCompleteness(page);
}

// -- submit and keys -------------------------------------------------------------------

async function submit(page) {
  if (page.readOnly) return;
  const todo = common.incomplete(page.answers.map((answer) => lacksInWords(COMPLETENESS, answer)), "claim", "claims");
  if (todo) {
    select(page, todo.index);
    page.errors = [todo.error];
    renderErrors(page, page.parts.errorsEl);
    renderList(page, page.listEl);
    return;
  }
  await submitAndContinue(page.saver, page.parts.submitButton, page.state.next_url);
}

function onKey(page, event) {
  const target = event.target;
  if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
  if (target.tagName === "BUTTON" && (event.key === "Enter" || event.key === " ")) return;
  const k = page.passageCursor[page.current];
  const navigation = {
    "]": () => select(page, page.current + 1), "[": () => select(page, page.current - 1),
    j: () => selectPassage(page, k + 1), ArrowDown: () => selectPassage(page, k + 1),
    k: () => selectPassage(page, k - 1), ArrowUp: () => selectPassage(page, k - 1),
    s: () => focusSearch(page),
  };
  const [what, at] = underCursor(page);
  const edits = {g: () => toggleUsed(page, what === "manual" ? `${MANUAL}${at}` : at), m: () => addManual(page),
    c: () => focusCorrection(page)};
  if (what === "passage") {
    for (const [value, , key] of STANCES) edits[key] = () => setPassage(page, at, "stances", value);
    for (const [value, , key] of RELIABLE) edits[key] = () => setPassage(page, at, "reliable", value);
  } else {
    for (const [value, , key] of MANUAL_RELIABLE) edits[key] = () => setManual(page, at, {reliable: value});
    for (const [value, , key] of SUFFICIENT) edits[key] = () => setManual(page, at, {sufficient: value});
  }
  for (const [value, , key] of DECIDED) edits[key] = () => setAnswer(page, {decided: value});
  for (const [value, , key] of FACTUALITY) edits[key] = () => setAnswer(page, {factuality: value});
  for (const [value, , key] of NEEDS_EDIT) edits[key] = () => setAnswer(page, {needs_edit: value});
  const action = navigation[event.key] || (page.readOnly ? null : edits[event.key]);
  if (action) { event.preventDefault(); action(); }
}

// -- start -----------------------------------------------------------------------------

function start(state, options = {}) {
  const page = createPage(state, options);
  page.saver = pageSaver({state, consolidation: page.consolidation, payload: () => ({claims: page.answers}),
    onErrors: (list) => {
      page.errors = list;
      renderErrors(page, page.parts.errorsEl);
      renderEditor(page, page.parts.editorEl);
      renderList(page, page.listEl);
    }});
  page.current = common.firstDisagreement(page.disagreed, "claims");
  render(page);
  endPage({state, parts: page.parts, submit: () => submit(page), onKey: (event) => onKey(page, event), legend: KEY_LEGEND,
    consolidation: page.consolidation});
}

start(pageState, {consolidation: consolidating});
