/*
 * Factcheck-Bench step 1 (Wang et al., Figure 11): decontextualise each sentence of a
 * response, judge its importance and checkworthiness, decompose it into atomic claims with a
 * category and an importance each. The page's state is one object (pageOf); each region is
 * drawn by its own render function; every change goes through changed(page), which saves.
 * start(state) drives the annotator's page;
 * start(state, {consolidation: true}) the consolidator's, where the same editor
 * holds the gold record and every field can be taken from either annotator.
 *
 * The DOM is built with el() (common.js) only: user text is always inserted as text.
 */
import * as common from "../js/common.js";
import {classes, el, labelOf, suggested, theirBox, withKeys} from "../js/common.js";
import {pageSaver} from "../js/save.js";
import {endPage, submitAndContinue} from "../js/ending.js";
import {legendLine, pageKeys} from "../js/keys.js";
import {entryRules, lacksInWords} from "../js/completeness.js";
import {autosize, blankClaim, blankSentence, clone, linkClaimsToRows, normalise, readablePath, theirClaim} from "./factcheck_model.js";

// The page state, with the kind's label lists (state.rules, annotation/kinds/factcheck/page.py);
// the page adds a key to each entry, in list order.
const {state: pageState, consolidation: consolidating} = common.pageState();
const RULES = pageState.rules.choices;
const {choiceKeys} = pageKeys(pageState.keys);  // state.keys, from page.py
const SENTENCE_IMPORTANCE = withKeys(RULES.importance, choiceKeys("sentences[].importance"));
// one list of keys for the checkworthy answers: yes / no, then why not
const CHECKWORTHY = withKeys(RULES.checkworthy, choiceKeys("sentences[].checkworthy"));
const CHECKWORTHY_MORE = withKeys(RULES.checkworthy_more, choiceKeys("sentences[].checkworthy").slice(RULES.checkworthy.length));
const CATEGORIES = withKeys(RULES.category, choiceKeys("sentences[].claims[].category"));
const CLAIM_IMPORTANCE = withKeys(RULES.claim_importance, choiceKeys("sentences[].claims[].importance"));
// What a sentence still lacks before a submit, in words, by the kind's completeness rules
// (state.rules.completeness): ["importance", "claim 1: text, category"].
const SENTENCE_RULES = entryRules(pageState.rules.completeness, "sentences");
const missing = (sentence) => lacksInWords(SENTENCE_RULES, sentence);

const KEY_LEGEND = [
  legendLine(SENTENCE_IMPORTANCE, "sentence importance"),
  legendLine(CHECKWORTHY, "sentence is checkworthy"),
  legendLine(CHECKWORTHY_MORE, "not checkworthy because"),
  ["j / ↓", "next sentence"],
  ["k / ↑", "previous sentence"],
  ["] / [", "next / previous claim"],
  legendLine(CATEGORIES, "claim category"),
  legendLine(CLAIM_IMPORTANCE, "claim importance"),
  ["a", "add a claim after the selected one"],
  ["Delete", "remove the selected claim"],
  ["Alt+↑ / Alt+↓", "move the selected claim up / down"],
  ["d", "edit the decontextualised sentence"],
  ["Enter", "edit the selected claim's text"],
  ["Esc", "leave a text field"],
  ["Ctrl+Enter", "submit"],
];

const readable = {
  importance: (v) => labelOf(SENTENCE_IMPORTANCE, v),
  checkworthy: (v) => labelOf([...CHECKWORTHY, ...CHECKWORTHY_MORE], v),
  category: (v) => labelOf(CATEGORIES, v),
  claimImportance: (v) => labelOf(CLAIM_IMPORTANCE, v),
};

/* The page, in one object: what the server handed it, the annotator's answers (sentences),
 * where the cursor is, the errors shown, the undo of a reset, and its DOM regions. */
function pageOf(state, consolidation) {
  const {disagreed, annotations, alignment} = common.theirAnswers(state);
  const parts = common.pageParts();
  const sentences = (state.payload.sentences || []).map(blankSentence);
  return {
    state, consolidation, readOnly: Boolean(state.read_only),
    texts: state.content.sentences || [],
    sentences,
    hints: (state.suggestion && state.suggestion.sentences) || [],
    provenance: state.provenance || {},
    disagreed, annotations, alignment,
    // Consolidation: each gold claim remembers its alignment row (the row of the annotators'
    // claims it came from), so comparisons follow it when it is moved, and rows left out of
    // the gold record can be brought back.
    rowOf: new WeakMap(),
    current: 0,
    claimCursor: sentences.map(() => 0),
    errors: [],   // [{field, message}] from the server or from a refused submit
    undo: null,   // {index, sentence} after "Reset to suggestion"
    saver: null,
    parts, listEl: document.getElementById("sentences"), ...parts,
  };
}

function disagreementCount(page, index) {
  const prefix = `sentences[${index}].`;
  return [...page.disagreed].filter((path) => path.startsWith(prefix)).length;
}

const theirClaimOf = (page, k, row) => theirClaim(page.annotations, page.alignment, k, page.current, row);

// -- changes -----------------------------------------------------------------------------

/* The one path of every change: redraw what it touches, then save. */
function changed(page, {rerender = true} = {}) {
  page.undo = null;
  if (rerender) renderEditor(page);
  renderList(page);
  renderCompleteness(page);
  page.saver.schedule();
}

function setSentence(page, patch) {
  if (page.readOnly) return;
  Object.assign(page.sentences[page.current], patch);
  changed(page);
}

function setClaim(page, row, patch) {
  const claims = page.sentences[page.current].claims;
  if (page.readOnly || !claims[row]) return;
  page.claimCursor[page.current] = row;
  Object.assign(claims[row], patch);
  changed(page);
}

function addClaim(page, claim = blankClaim(), {focus = true, at} = {}) {
  if (page.readOnly) return;
  const claims = page.sentences[page.current].claims;
  const position = at ?? (claims.length ? page.claimCursor[page.current] + 1 : 0);
  claims.splice(position, 0, claim);
  page.claimCursor[page.current] = position;
  changed(page);
  if (focus) focusClaimText(page);
}

function removeClaim(page, row = page.claimCursor[page.current]) {
  const claims = page.sentences[page.current].claims;
  if (page.readOnly || !claims[row]) return;
  claims.splice(row, 1);
  page.claimCursor[page.current] = Math.max(0, Math.min(row, claims.length - 1));
  changed(page);
}

function moveClaim(page, delta, row = page.claimCursor[page.current]) {
  const claims = page.sentences[page.current].claims;
  const target = row + delta;
  if (page.readOnly || !claims[row] || target < 0 || target >= claims.length) return;
  [claims[row], claims[target]] = [claims[target], claims[row]];
  page.claimCursor[page.current] = target;
  changed(page);
  scrollClaimIntoView(page);
}

function resetToSuggestion(page) {
  const current = page.current;
  const hint = page.hints[current];
  if (page.readOnly || !hint) return;
  const before = clone(page.sentences[current]);
  page.sentences[current] = blankSentence({
    decontext: hint.decontext || page.texts[current],
    claims: (hint.claims || []).map((c) => ({text: c.text, category: null, importance: null})),
  });
  page.claimCursor[current] = 0;
  changed(page);
  page.undo = {index: current, sentence: before};
  renderEditor(page);
}

function undoReset(page) {
  if (!page.undo) return;
  page.sentences[page.undo.index] = blankSentence(page.undo.sentence);
  changed(page);
}

function useWholeSentence(page, annotationIndex) {
  if (page.readOnly) return;
  const current = page.current;
  const theirs = page.annotations[annotationIndex].payload.sentences[current];
  const rows = page.alignment[current] || [];
  const claims = theirs.claims.map(blankClaim);
  claims.forEach((claim, j) => {
    const row = rows.findIndex((r) => r[annotationIndex] === j);
    if (row >= 0) page.rowOf.set(claim, row);
  });
  page.sentences[current] = {...blankSentence(theirs), claims};
  page.claimCursor[current] = 0;
  changed(page);
}

function useTheirClaim(page, row, annotationIndex, claimIndexInGold) {
  const theirs = theirClaimOf(page, annotationIndex, row);
  if (!theirs) return;
  if (claimIndexInGold === undefined) {
    // bring a left-out row back, after the gold claims of earlier rows
    const claims = page.sentences[page.current].claims;
    const position = claims.filter((c) => page.rowOf.has(c) && page.rowOf.get(c) < row).length;
    const claim = blankClaim(theirs);
    page.rowOf.set(claim, row);
    addClaim(page, claim, {focus: false, at: position});
  } else setClaim(page, claimIndexInGold, blankClaim(theirs));
}

// -- navigation --------------------------------------------------------------------------

function select(page, index) {
  const next = Math.max(0, Math.min(page.sentences.length - 1, index));
  const moved = next !== page.current;
  page.current = next;
  if (moved) page.undo = null;
  render(page);
  page.listEl.children[page.current]?.scrollIntoView({block: "nearest"});
  const top = page.editorEl.getBoundingClientRect().top;
  if (moved && (top < 0 || top > window.innerHeight * 0.5)) page.editorEl.scrollIntoView({block: "start"});
}

const claimNodes = (page) => page.editorEl.querySelectorAll(".fc-claim");

function selectClaim(page, row) {
  const claims = page.sentences[page.current].claims;
  if (!claims.length) return;
  page.claimCursor[page.current] = Math.max(0, Math.min(claims.length - 1, row));
  claimNodes(page).forEach((node, r) => node.classList.toggle("current", r === page.claimCursor[page.current]));
  scrollClaimIntoView(page);
}

function scrollClaimIntoView(page) {
  claimNodes(page)[page.claimCursor[page.current]]?.scrollIntoView({block: "nearest"});
}

function focusAtEnd(field) {
  if (!field || field.disabled) return;
  field.focus();
  field.setSelectionRange(field.value.length, field.value.length);
}

const focusClaimText = (page) => focusAtEnd(claimNodes(page)[page.claimCursor[page.current]]?.querySelector(".fc-claim-text"));
const focusDecontext = (page) => focusAtEnd(page.editorEl.querySelector(".fc-decontext"));

// -- rendering: the sentence list, the completeness, the errors --------------------------

function render(page) {
  renderEditor(page);
  renderList(page);
}

function errorsAt(page, path) {
  return page.errors.filter((e) => e.field === path || (e.field || "").startsWith(`${path}.`) || (e.field || "").startsWith(`${path}[`));
}

function renderList(page) {
  const {sentences, current} = page;
  page.listEl.replaceChildren(...sentences.map((sentence, i) => {
    const done = !missing(sentence).length;
    const disputes = page.consolidation ? disagreementCount(page, i) : 0;
    return el("li", {className: classes("fc-sentence", done ? "done" : "todo", i === current && "current",
      errorsAt(page, `sentences[${i}]`).length && "invalid"), "data-index": i},
      el("button", {type: "button", className: "fc-sentence-pick", "aria-current": i === current ? "true" : null,
        onclick: () => select(page, i)},
        el("span", {className: "fc-sentence-text"}, page.texts[i]),
        el("span", {className: "fc-sentence-meta"},
          el("span", {className: `badge fc-state ${done ? "done" : "todo"}`}, done ? "done" : "todo"),
          ` ${sentence.claims.length} claim${sentence.claims.length === 1 ? "" : "s"}`,
          disputes ? el("span", {className: "badge fc-disputes"}, `${disputes} disagreement${disputes === 1 ? "" : "s"}`) : null)));
  }));
}

function renderCompleteness(page) {
  const done = page.sentences.filter((s) => !missing(s).length).length;
  common.showProgress(page.parts, {done, total: page.sentences.length, unit: "sentence", readOnly: page.readOnly});
  const missingEl = page.editorEl.querySelector(".fc-missing");
  if (missingEl) renderMissing(page, missingEl);
}

function renderMissing(page, node) {
  common.showLacks(node, missing(page.sentences[page.current]), "sentence");
}

function renderErrors(page) {
  page.errorsEl.replaceChildren(...page.errors.map((e) => el("li", {}, e.field ? `${readablePath(e.field)}: ${e.message}` : e.message)));
}

// -- rendering: the editor of the current sentence ---------------------------------------

const choices = (page, options, value, onPick, settings = {}) => common.choices(options, value, onPick, {...settings, readOnly: page.readOnly});
const compareRow = (page, boxes, agreed) => common.compareRow(boxes, agreed, page.annotations.length);

/* The annotators' values of a sentence field, each with its "Use A" / "Use B" button. */
function comparison(page, field, show, pick) {
  if (!page.consolidation) return null;
  const values = page.annotations.map((a) => a.payload.sentences[page.current][field]);
  const agreed = values.every((v) => normalise(String(v)) === normalise(String(values[0])));
  return compareRow(page, page.annotations.map((annotation, k) => theirBox(annotation, show(values[k]),
    page.readOnly ? null : el("button", {type: "button", className: "small fc-use", onclick: () => pick(values[k])}, `Use ${annotation.slot}`))),
  agreed);
}

function theirClaimView(claim) {
  if (!claim) return el("span", {className: "fc-none"}, "no claim in this row");
  return el("div", {className: "fc-their-claim"},
    el("div", {className: "fc-their-text"}, claim.text || "(empty)"),
    el("div", {className: "fc-their-labels"}, `${readable.category(claim.category)} · importance ${readable.claimImportance(claim.importance)}`));
}

/* The annotators' claims of one alignment row; goldIndex undefined: the row is not in the gold record. */
function claimComparison(page, row, goldIndex) {
  if (!page.consolidation || row === undefined) return null;
  const theirs = page.annotations.map((_, k) => theirClaimOf(page, k, row));
  const agreed = theirs.every((c) => c && theirs[0] && normalise(c.text) === normalise(theirs[0].text)
    && c.category === theirs[0].category && c.importance === theirs[0].importance);
  return compareRow(page, page.annotations.map((annotation, k) => theirBox(annotation, theirClaimView(theirs[k]),
    page.readOnly || !theirs[k] ? null : el("button", {type: "button", className: "small fc-use",
      onclick: (event) => { event.stopPropagation(); useTheirClaim(page, row, k, goldIndex); }},
    goldIndex === undefined ? `Add ${annotation.slot}'s` : `Use ${annotation.slot}`))),
  agreed);
}

/* The machine's category or importance for a claim whose text is still the suggested one. */
function claimHint(page, claim, field) {
  const hint = (page.hints[page.current]?.claims || []).find((c) => normalise(c.text) === normalise(claim.text));
  if (!hint) return null;
  return field === "category" ? suggested(hint.category, readable.category) : suggested(hint.importance, readable.claimImportance);
}

function renderClaim(page, claim, r) {
  const {consolidation, readOnly} = page;
  const sentencePath = `sentences[${page.current}]`;
  const row = page.rowOf.get(claim);
  const disagree = (field) => consolidation && row !== undefined && page.disagreed.has(`${sentencePath}.claims[${row}].${field}`);
  const invalid = (field) => page.errors.some((e) => e.field === `${sentencePath}.claims[${r}].${field}`);
  const count = page.sentences[page.current].claims.length;
  const text = el("textarea", {
    className: classes("fc-claim-text", disagree("text") && "disagree", invalid("text") && "invalid"),
    rows: 1, value: claim.text, disabled: readOnly, "aria-label": `Claim ${r + 1}`, placeholder: "the atomic claim, understandable on its own",
    oninput: (event) => { claim.text = event.target.value; autosize(event.target); changed(page, {rerender: false}); },
    onfocus: () => selectClaim(page, r),
    onkeydown: (event) => { if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) { event.preventDefault(); event.target.blur(); } },
  });
  return el("li", {className: `fc-claim${r === page.claimCursor[page.current] ? " current" : ""}`, "data-index": r, onclick: () => selectClaim(page, r)},
    el("div", {className: "fc-claim-line"},
      el("span", {className: "fc-claim-number"}, `${r + 1}.`),
      text,
      readOnly ? null : el("span", {className: "fc-claim-tools"},
        el("button", {type: "button", className: "small fc-up", title: "move up (Alt+↑)", disabled: r === 0,
          onclick: (event) => { event.stopPropagation(); moveClaim(page, -1, r); }}, "↑"),
        el("button", {type: "button", className: "small fc-down", title: "move down (Alt+↓)", disabled: r === count - 1,
          onclick: (event) => { event.stopPropagation(); moveClaim(page, 1, r); }}, "↓"),
        el("button", {type: "button", className: "small fc-remove", title: consolidation ? "remove this row from the gold record (Delete)" : "remove (Delete)",
          onclick: (event) => { event.stopPropagation(); removeClaim(page, r); }}, "Remove"))),
    el("div", {className: "fc-claim-choices"},
      el("span", {className: "fc-choice-line"},
        el("span", {className: "fc-choice-label"}, "Category"),
        choices(page, CATEGORIES, claim.category, (v) => setClaim(page, r, {category: v}),
          {className: "fc-category", disagree: disagree("category"), invalid: invalid("category")}),
        claimHint(page, claim, "category")),
      el("span", {className: "fc-choice-line"},
        el("span", {className: "fc-choice-label"}, "Importance"),
        choices(page, CLAIM_IMPORTANCE, claim.importance, (v) => setClaim(page, r, {importance: v}),
          {className: "fc-claim-importance", disagree: disagree("importance"), invalid: invalid("importance")}),
        claimHint(page, claim, "importance"))),
    claimComparison(page, row, r));
}

function provenanceNote(page) {
  const {provenance, current: index} = page;
  if (page.consolidation) return null;
  if (!page.hints.length) return el("p", {className: "fc-provenance"}, "No machine suggestion for this item: decompose the sentence yourself.");
  const parts = [];
  if (provenance.backend) parts.push(`backend ${provenance.backend}`);
  if (provenance.model) parts.push(`model ${provenance.model}`);
  if (provenance.segmenter) parts.push(`segmenter ${provenance.segmenter}`);
  const fallback = (provenance.decomposition && provenance.decomposition.fallback_sentences) || [];
  return el("p", {className: "fc-provenance"},
    "Pre-filled from machine suggestions",
    parts.length ? ` (${parts.join(", ")})` : " (imported with the item)",
    ". The judgements are yours: suggestions are shown, not selected.",
    Array.isArray(fallback) && fallback.includes(index) ? " The model's answer for this sentence could not be used; the offline decomposition is shown." : "");
}

function headTools(page) {
  const i = page.current;
  if (page.readOnly) return null;
  if (page.consolidation) {
    return el("span", {className: "fc-head-tools"}, page.annotations.map((annotation, k) => el("button", {type: "button", className: "small fc-use-sentence",
      "data-slot": annotation.slot, onclick: () => useWholeSentence(page, k)}, `Use ${annotation.slot}'s whole sentence`)));
  }
  return el("span", {className: "fc-head-tools"},
    page.undo && page.undo.index === i ? el("button", {type: "button", className: "small fc-undo", onclick: () => undoReset(page)}, "Undo reset") : null,
    page.hints[i] ? el("button", {type: "button", className: "small fc-reset", title: "restore the suggested decontextualised sentence and claims; clears your judgements of this sentence",
      onclick: () => resetToSuggestion(page)}, "Reset to suggestion") : null);
}

function renderEditor(page) {
  const {consolidation, readOnly, annotations} = page;
  const i = page.current;
  const sentence = page.sentences[i];
  const hint = page.hints[i] || {};
  const path = `sentences[${i}]`;
  const disagree = (field) => consolidation && page.disagreed.has(`${path}.${field}`);
  const invalid = (field) => page.errors.some((e) => e.field === `${path}.${field}`);
  const rows = page.alignment[i] || [];
  const inGold = new Set(sentence.claims.map((c) => page.rowOf.get(c)).filter((r) => r !== undefined));
  const leftOut = consolidation ? rows.map((_, r) => r).filter((r) => !inGold.has(r)) : [];

  /* A sentence label: its choices (and more after them), the hint, each annotator's value. */
  const labelField = (key, label, options, more = null) => {
    const pick = (v) => setSentence(page, {[key]: v});
    return el("div", {className: classes("fc-field", disagree(key) && "disagree")},
      el("div", {className: "fc-choice-line"},
        el("span", {className: "fc-field-label"}, label),
        el("div", {className: "fc-choice-options"},
          choices(page, options, sentence[key], pick, {className: `fc-${key}`, invalid: invalid(key)}),
          suggested(hint[key], readable[key]),
          more)),
      comparison(page, key, (v) => el("div", {className: "fc-their-value"}, readable[key](v)), pick));
  };

  const decontext = el("textarea", {
    className: classes("fc-decontext", invalid("decontext") && "invalid"), rows: 2, value: sentence.decontext, disabled: readOnly,
    id: "fc-decontext", placeholder: "the sentence rewritten to be understood without the rest of the response",
    oninput: (event) => { sentence.decontext = event.target.value; autosize(event.target); changed(page, {rerender: false}); },
  });

  // (replaceChildren would write null as text: skip the absent parts)
  page.editorEl.replaceChildren(...[
    el("div", {className: "fc-editor-head"},
      el("h2", {}, `Sentence ${i + 1} `, el("small", {}, `of ${page.sentences.length}`)),
      el("span", {className: "spacer"}),
      headTools(page)),
    el("blockquote", {className: "fc-original"}, page.texts[i]),
    provenanceNote(page),
    el("p", {className: "fc-missing", role: "status"}),

    el("div", {className: classes("fc-field", disagree("decontext") && "disagree")},
      el("label", {className: "fc-field-label", for: "fc-decontext"}, "Decontextualised sentence ", el("kbd", {}, "d")),
      decontext,
      comparison(page, "decontext", (v) => el("div", {className: "fc-their-text"}, v || "(empty)"), (v) => setSentence(page, {decontext: v}))),

    labelField("importance", "Importance", SENTENCE_IMPORTANCE),
    labelField("checkworthy", "Checkworthy", CHECKWORTHY, [
      el("span", {className: "fc-or"}, "not checkworthy as:"),
      choices(page, CHECKWORTHY_MORE, sentence.checkworthy, (v) => setSentence(page, {checkworthy: v}),
        {className: "fc-checkworthy fc-checkworthy-more", invalid: invalid("checkworthy")})]),

    el("section", {className: classes("fc-claims", disagree("claims") && "disagree")},
      el("h3", {className: "fc-claims-title"}, "Claims ",
        el("small", {}, consolidation
          ? annotations.map((a) => `${a.slot}: ${a.payload.sentences[i].claims.length}`).join(" · ") + " — one row per aligned claim"
          : "atomic, each understandable on its own")),
      sentence.claims.length
        ? el("ol", {className: "fc-claim-list"}, sentence.claims.map((claim, r) => renderClaim(page, claim, r)))
        : el("p", {className: "hint fc-no-claims"}, "No claims: this sentence makes no claim, or press a to add one."),
      leftOut.length ? el("div", {className: "fc-left-out"},
        el("h4", {}, "Rows left out of the gold record"),
        leftOut.map((row) => el("div", {className: "fc-left-out-row", "data-row": row}, claimComparison(page, row, undefined)))) : null,
      readOnly ? null : el("button", {type: "button", className: "fc-add", onclick: () => addClaim(page)}, "Add claim ", el("kbd", {}, "a"))),
  ].filter(Boolean));
  renderMissing(page, page.editorEl.querySelector(".fc-missing"));
  page.editorEl.querySelectorAll("textarea").forEach(autosize);
}

// -- submit and keys ---------------------------------------------------------------------

async function submit(page) {
  if (page.readOnly) return;
  const todo = common.incomplete(page.sentences.map(missing), "sentence", "sentences");
  if (todo) {
    select(page, todo.index);
    page.errors = [todo.error];
    renderErrors(page);
    renderList(page);
    return;
  }
  await submitAndContinue(page.saver, page.submitButton, page.state.next_url);
}

function onKey(page, event) {
  const target = event.target;
  if (event.ctrlKey || event.metaKey || event.isComposing) return;
  if (target.tagName === "BUTTON" && (event.key === "Enter" || event.key === " ")) return;
  // Alt+↑/↓ move the selected claim
  if (event.altKey) {
    if (event.key === "ArrowUp" || event.key === "ArrowDown") {
      event.preventDefault();
      moveClaim(page, event.key === "ArrowUp" ? -1 : 1);
    }
    return;
  }
  const current = page.current;
  const claim = page.claimCursor[current];
  const navigation = {
    j: () => select(page, current + 1), ArrowDown: () => select(page, current + 1),
    k: () => select(page, current - 1), ArrowUp: () => select(page, current - 1),
    "]": () => selectClaim(page, claim + 1), "[": () => selectClaim(page, claim - 1),
  };
  const edits = {
    d: () => focusDecontext(page),
    Enter: () => focusClaimText(page),
    a: () => addClaim(page),
    Delete: () => removeClaim(page),
  };
  if (page.consolidation) {
    // Shift+A, Shift+B: take that annotator's whole sentence
    (page.state.annotations || []).forEach((annotation, k) => { edits[annotation.slot] = () => useWholeSentence(page, k); });
  }
  for (const [value, , key] of SENTENCE_IMPORTANCE) edits[key] = () => setSentence(page, {importance: value});
  for (const [value, , key] of [...CHECKWORTHY, ...CHECKWORTHY_MORE]) edits[key] = () => setSentence(page, {checkworthy: value});
  for (const [value, , key] of CATEGORIES) edits[key] = () => setClaim(page, claim, {category: value});
  for (const [value, , key] of CLAIM_IMPORTANCE) edits[key] = () => setClaim(page, claim, {importance: value});
  const action = navigation[event.key] || (page.readOnly ? null : edits[event.key]);
  if (action) { event.preventDefault(); action(); }
}

// -- start -------------------------------------------------------------------------------

function start(state, options = {}) {
  const page = pageOf(state, Boolean(options.consolidation));
  if (page.consolidation) linkClaimsToRows(page, state.draft_rows || []);
  page.saver = pageSaver({
    state, consolidation: page.consolidation, payload: () => ({sentences: page.sentences}),
    extra: () => ({draft_rows: page.sentences.map((s) => s.claims.map((claim) => (page.rowOf.has(claim) ? page.rowOf.get(claim) : null)))}),
    onErrors: (list) => { page.errors = list; renderErrors(page); render(page); },
  });

  // A consolidator starts at the first sentence with a disagreement, an annotator at the top.
  page.current = common.firstDisagreement(page.disagreed, "sentences");
  if (page.sentences.length) render(page);
  else page.editorEl.replaceChildren(el("p", {className: "hint"}, "This item has no sentences."));
  renderCompleteness(page);
  const legend = page.consolidation ? [...KEY_LEGEND, ["⇧A / ⇧B", "use A's / B's whole sentence"]] : KEY_LEGEND;
  endPage({state, parts: page.parts, submit: () => submit(page), onKey: (event) => onKey(page, event), legend, consolidation: page.consolidation});
}

start(pageState, {consolidation: consolidating});
