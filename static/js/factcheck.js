/*
 * Factcheck-Bench step 1 (Wang et al., Figure 11): decontextualise each sentence of a
 * response, judge its importance and checkworthiness, decompose it into atomic claims with a
 * category and an importance each. start(state) drives the annotator's page;
 * start(state, {consolidation: true}) the consolidator's, where the same editor
 * holds the gold record and every field can be taken from either annotator.
 *
 * The DOM is built with el() (common.js) only: user text is always inserted as text.
 */
import * as common from "./common.js";
import {classes, el, labelOf, suggested, theirBox, withKeys} from "./common.js";
import {pageSaver} from "./save.js";
import {endPage, submitAndContinue} from "./ending.js";
import {legendLine} from "./keys.js";
import {autosize, blankClaim, blankSentence, clone, normalise, readablePath, sentenceLacks} from "./factcheck_model.js";

// The page state, with the kind's label lists (state.rules, annotation/kinds/page_rules.py);
// the page adds a key to each entry, in list order.
const {state: pageState, consolidation: consolidating} = common.pageState();
const RULES = pageState.rules.choices;
const SENTENCE_IMPORTANCE = withKeys(RULES.importance, ["1", "2", "3"]);
const CHECKWORTHY = withKeys(RULES.checkworthy, ["y", "n"]);
const CHECKWORTHY_MORE = withKeys(RULES.checkworthy_more, ["O", "T", "H"]);
const CATEGORIES = withKeys(RULES.category, ["f", "o", "t", "h"]);
const CLAIM_IMPORTANCE = withKeys(RULES.claim_importance, ["q", "w", "e"]);
// What a sentence still lacks before a submit, by the kind's rules.
const missing = sentenceLacks(pageState.rules.required);

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
function start(state, options = {}) {
  const consolidation = Boolean(options.consolidation);
  const readOnly = Boolean(state.read_only);
  const texts = state.content.sentences || [];
  const sentences = (state.payload.sentences || []).map(blankSentence);
  const hints = (state.suggestion && state.suggestion.sentences) || [];
  const provenance = state.provenance || {};
  const {disagreed, annotations, alignment} = common.theirAnswers(state);

  const listEl = document.getElementById("sentences");
  const parts = common.pageParts();
  const {editorEl, errorsEl, completenessEl, submitButton} = parts;

  let current = 0;
  const claimCursor = sentences.map(() => 0);
  let errors = [];         // [{field, message}] from the server or from a refused submit
  let undo = null;         // {index, sentence} after "Reset to suggestion"

  // Consolidation: each gold claim remembers its alignment row (the row of the annotators'
  // claims it came from), so comparisons follow it when it is moved, and rows left out of
  // the gold record can be brought back.
  const rowOf = new WeakMap();
  if (consolidation) linkClaimsToRows();

  const saver = pageSaver({
    state, consolidation, payload: () => ({sentences}),
    extra: () => ({draft_rows: sentences.map((s) => s.claims.map((claim) => (rowOf.has(claim) ? rowOf.get(claim) : null)))}),
    onErrors: (list) => { errors = list; renderErrors(); renderEditor(); renderList(); },
  });

  // -- consolidation helpers -------------------------------------------------------------

  function theirClaim(annotationIndex, sentenceIndex, row) {
    const rows = alignment[sentenceIndex] || [];
    const claimIndex = rows[row] ? rows[row][annotationIndex] : null;
    if (claimIndex === null || claimIndex === undefined) return null;
    return annotations[annotationIndex].payload.sentences[sentenceIndex].claims[claimIndex] || null;
  }

  function rowTexts(sentenceIndex, row) {
    return annotations.map((_, k) => theirClaim(k, sentenceIndex, row)).filter(Boolean).map((c) => normalise(c.text));
  }

  function linkClaimsToRows() {
    // A saved draft says which row each claim came from. Without that (a draft saved before
    // rows were recorded), claims are matched to rows by text first (same position
    // preferred), then by position; the opened draft has one claim per row.
    const saved = state.draft_rows || [];
    sentences.forEach((sentence, i) => {
      const rows = alignment[i] || [];
      if (Array.isArray(saved[i]) && saved[i].length === sentence.claims.length) {
        sentence.claims.forEach((claim, r) => { if (saved[i][r] !== null && saved[i][r] < rows.length) rowOf.set(claim, saved[i][r]); });
        return;
      }
      const used = new Set();
      const unmatched = [];
      sentence.claims.forEach((claim, r) => {
        const text = normalise(claim.text);
        const matches = (row) => !used.has(row) && text && rowTexts(i, row).includes(text);
        const row = matches(r) ? r : rows.findIndex((_, k) => matches(k));
        if (row >= 0) { rowOf.set(claim, row); used.add(row); } else unmatched.push([claim, r]);
      });
      for (const [claim, r] of unmatched) {
        if (r < rows.length && !used.has(r) && !normalise(claim.text)) { rowOf.set(claim, r); used.add(r); }
      }
    });
  }

  function disagreementCount(index) {
    const prefix = `sentences[${index}].`;
    return [...disagreed].filter((path) => path.startsWith(prefix)).length;
  }

  // -- changes ---------------------------------------------------------------------------

  function changed({rerender = true} = {}) {
    undo = null;
    if (rerender) renderEditor();
    renderList();
    updateCompleteness();
    saver.schedule();
  }

  function setSentence(patch) {
    if (readOnly) return;
    Object.assign(sentences[current], patch);
    changed();
  }

  function setClaim(row, patch) {
    const claims = sentences[current].claims;
    if (readOnly || !claims[row]) return;
    claimCursor[current] = row;
    Object.assign(claims[row], patch);
    changed();
  }

  function addClaim(claim = blankClaim(), {focus = true, at} = {}) {
    if (readOnly) return;
    const claims = sentences[current].claims;
    const position = at ?? (claims.length ? claimCursor[current] + 1 : 0);
    claims.splice(position, 0, claim);
    claimCursor[current] = position;
    changed();
    if (focus) focusClaimText();
  }

  function removeClaim(row = claimCursor[current]) {
    const claims = sentences[current].claims;
    if (readOnly || !claims[row]) return;
    claims.splice(row, 1);
    claimCursor[current] = Math.max(0, Math.min(row, claims.length - 1));
    changed();
  }

  function moveClaim(delta, row = claimCursor[current]) {
    const claims = sentences[current].claims;
    const target = row + delta;
    if (readOnly || !claims[row] || target < 0 || target >= claims.length) return;
    [claims[row], claims[target]] = [claims[target], claims[row]];
    claimCursor[current] = target;
    changed();
    scrollClaimIntoView();
  }

  function resetToSuggestion() {
    const hint = hints[current];
    if (readOnly || !hint) return;
    const before = clone(sentences[current]);
    sentences[current] = blankSentence({
      decontext: hint.decontext || texts[current],
      claims: (hint.claims || []).map((c) => ({text: c.text, category: null, importance: null})),
    });
    claimCursor[current] = 0;
    changed();
    undo = {index: current, sentence: before};
    renderEditor();
  }

  function undoReset() {
    if (!undo) return;
    sentences[undo.index] = blankSentence(undo.sentence);
    changed();
  }

  function useWholeSentence(annotationIndex) {
    if (readOnly) return;
    const theirs = annotations[annotationIndex].payload.sentences[current];
    const rows = alignment[current] || [];
    const claims = theirs.claims.map(blankClaim);
    claims.forEach((claim, j) => {
      const row = rows.findIndex((r) => r[annotationIndex] === j);
      if (row >= 0) rowOf.set(claim, row);
    });
    sentences[current] = {...blankSentence(theirs), claims};
    claimCursor[current] = 0;
    changed();
  }

  function useTheirClaim(row, annotationIndex, claimIndexInGold) {
    const theirs = theirClaim(annotationIndex, current, row);
    if (!theirs) return;
    if (claimIndexInGold === undefined) {
      // bring a left-out row back, after the gold claims of earlier rows
      const claims = sentences[current].claims;
      const position = claims.filter((c) => rowOf.has(c) && rowOf.get(c) < row).length;
      const claim = blankClaim(theirs);
      rowOf.set(claim, row);
      addClaim(claim, {focus: false, at: position});
    } else setClaim(claimIndexInGold, blankClaim(theirs));
  }

  // -- navigation ------------------------------------------------------------------------

  function select(index) {
    const next = Math.max(0, Math.min(sentences.length - 1, index));
    const moved = next !== current;
    current = next;
    if (moved) undo = null;
    renderEditor();
    renderList();
    listEl.children[current]?.scrollIntoView({block: "nearest"});
    const top = editorEl.getBoundingClientRect().top;
    if (moved && (top < 0 || top > window.innerHeight * 0.5)) editorEl.scrollIntoView({block: "start"});
  }

  function selectClaim(row) {
    const claims = sentences[current].claims;
    if (!claims.length) return;
    claimCursor[current] = Math.max(0, Math.min(claims.length - 1, row));
    editorEl.querySelectorAll(".fc-claim").forEach((node, r) => node.classList.toggle("current", r === claimCursor[current]));
    scrollClaimIntoView();
  }

  function scrollClaimIntoView() {
    editorEl.querySelectorAll(".fc-claim")[claimCursor[current]]?.scrollIntoView({block: "nearest"});
  }

  function focusClaimText() {
    const field = editorEl.querySelectorAll(".fc-claim")[claimCursor[current]]?.querySelector(".fc-claim-text");
    if (!field || field.disabled) return;
    field.focus();
    field.setSelectionRange(field.value.length, field.value.length);
  }

  function focusDecontext() {
    const field = editorEl.querySelector(".fc-decontext");
    if (!field || field.disabled) return;
    field.focus();
    field.setSelectionRange(field.value.length, field.value.length);
  }

  // -- rendering -------------------------------------------------------------------------

  function errorsAt(path) {
    return errors.filter((e) => e.field === path || (e.field || "").startsWith(`${path}.`) || (e.field || "").startsWith(`${path}[`));
  }

  function renderList() {
    listEl.replaceChildren(...sentences.map((sentence, i) => {
      const done = !missing(sentence).length;
      const disputes = consolidation ? disagreementCount(i) : 0;
      return el("li", {className: classes("fc-sentence", done ? "done" : "todo", i === current && "current",
        errorsAt(`sentences[${i}]`).length && "invalid"), "data-index": i},
        el("button", {type: "button", className: "fc-sentence-pick", "aria-current": i === current ? "true" : null,
          onclick: () => select(i)},
          el("span", {className: "fc-sentence-text"}, texts[i]),
          el("span", {className: "fc-sentence-meta"},
            el("span", {className: `badge fc-state ${done ? "done" : "todo"}`}, done ? "done" : "todo"),
            ` ${sentence.claims.length} claim${sentence.claims.length === 1 ? "" : "s"}`,
            disputes ? el("span", {className: "badge fc-disputes"}, `${disputes} disagreement${disputes === 1 ? "" : "s"}`) : null)));
    }));
  }

  function updateCompleteness() {
    const done = sentences.filter((s) => !missing(s).length).length;
    completenessEl.textContent = `${done}/${sentences.length} sentences done`;
    const ready = done === sentences.length;
    if (!readOnly) {
      submitButton.setAttribute("aria-disabled", ready ? "false" : "true");
      submitButton.title = ready ? "Ctrl+Enter" : "Every sentence must be done first (Ctrl+Enter shows what is missing)";
    }
    const missingEl = editorEl.querySelector(".fc-missing");
    if (missingEl) fillMissing(missingEl);
  }

  function fillMissing(node) {
    const lacks = missing(sentences[current]);
    node.classList.toggle("done", !lacks.length);
    node.replaceChildren(lacks.length ? `Still to do: ${lacks.join("; ")}` : "This sentence is done.");
  }

  function renderErrors() {
    errorsEl.replaceChildren(...errors.map((e) => el("li", {}, e.field ? `${readablePath(e.field)}: ${e.message}` : e.message)));
  }

  const choices = (options, value, onPick, settings = {}) => common.choices(options, value, onPick, {...settings, readOnly});
  const compareRow = (boxes, agreed) => common.compareRow(boxes, agreed, annotations.length);

  /* The annotators' values of a sentence field, each with its "Use A" / "Use B" button. */
  function comparison(field, show, pick) {
    if (!consolidation) return null;
    const values = annotations.map((a) => a.payload.sentences[current][field]);
    const agreed = values.every((v) => normalise(String(v)) === normalise(String(values[0])));
    return compareRow(annotations.map((annotation, k) => theirBox(annotation, show(values[k]),
      readOnly ? null : el("button", {type: "button", className: "small fc-use", onclick: () => pick(values[k])}, `Use ${annotation.slot}`))),
    agreed);
  }

  function theirClaimView(claim) {
    if (!claim) return el("span", {className: "fc-none"}, "no claim in this row");
    return el("div", {className: "fc-their-claim"},
      el("div", {className: "fc-their-text"}, claim.text || "(empty)"),
      el("div", {className: "fc-their-labels"}, `${readable.category(claim.category)} · importance ${readable.claimImportance(claim.importance)}`));
  }

  /* The annotators' claims of one alignment row; goldIndex undefined: the row is not in the gold record. */
  function claimComparison(row, goldIndex) {
    if (!consolidation || row === undefined) return null;
    const theirs = annotations.map((_, k) => theirClaim(k, current, row));
    const agreed = theirs.every((c) => c && theirs[0] && normalise(c.text) === normalise(theirs[0].text)
      && c.category === theirs[0].category && c.importance === theirs[0].importance);
    return compareRow(annotations.map((annotation, k) => theirBox(annotation, theirClaimView(theirs[k]),
      readOnly || !theirs[k] ? null : el("button", {type: "button", className: "small fc-use",
        onclick: (event) => { event.stopPropagation(); useTheirClaim(row, k, goldIndex); }},
      goldIndex === undefined ? `Add ${annotation.slot}'s` : `Use ${annotation.slot}`))),
    agreed);
  }

  /* The machine's category or importance for a claim whose text is still the suggested one. */
  function claimHint(claim, field) {
    const hint = (hints[current]?.claims || []).find((c) => normalise(c.text) === normalise(claim.text));
    if (!hint) return null;
    return field === "category" ? suggested(hint.category, readable.category) : suggested(hint.importance, readable.claimImportance);
  }

  function renderClaim(claim, r) {
    const sentencePath = `sentences[${current}]`;
    const row = rowOf.get(claim);
    const disagree = (field) => consolidation && row !== undefined && disagreed.has(`${sentencePath}.claims[${row}].${field}`);
    const invalid = (field) => errors.some((e) => e.field === `${sentencePath}.claims[${r}].${field}`);
    const count = sentences[current].claims.length;
    const text = el("textarea", {
      className: classes("fc-claim-text", disagree("text") && "disagree", invalid("text") && "invalid"),
      rows: 1, value: claim.text, disabled: readOnly, "aria-label": `Claim ${r + 1}`, placeholder: "the atomic claim, understandable on its own",
      oninput: (event) => { claim.text = event.target.value; autosize(event.target); changed({rerender: false}); },
      onfocus: () => selectClaim(r),
      onkeydown: (event) => { if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) { event.preventDefault(); event.target.blur(); } },
    });
    return el("li", {className: `fc-claim${r === claimCursor[current] ? " current" : ""}`, "data-index": r, onclick: () => selectClaim(r)},
      el("div", {className: "fc-claim-line"},
        el("span", {className: "fc-claim-number"}, `${r + 1}.`),
        text,
        readOnly ? null : el("span", {className: "fc-claim-tools"},
          el("button", {type: "button", className: "small fc-up", title: "move up (Alt+↑)", disabled: r === 0,
            onclick: (event) => { event.stopPropagation(); moveClaim(-1, r); }}, "↑"),
          el("button", {type: "button", className: "small fc-down", title: "move down (Alt+↓)", disabled: r === count - 1,
            onclick: (event) => { event.stopPropagation(); moveClaim(1, r); }}, "↓"),
          el("button", {type: "button", className: "small fc-remove", title: consolidation ? "remove this row from the gold record (Delete)" : "remove (Delete)",
            onclick: (event) => { event.stopPropagation(); removeClaim(r); }}, "Remove"))),
      el("div", {className: "fc-claim-choices"},
        el("span", {className: "fc-choice-line"},
          el("span", {className: "fc-choice-label"}, "Category"),
          choices(CATEGORIES, claim.category, (v) => setClaim(r, {category: v}),
            {className: "fc-category", disagree: disagree("category"), invalid: invalid("category")}),
          claimHint(claim, "category")),
        el("span", {className: "fc-choice-line"},
          el("span", {className: "fc-choice-label"}, "Importance"),
          choices(CLAIM_IMPORTANCE, claim.importance, (v) => setClaim(r, {importance: v}),
            {className: "fc-claim-importance", disagree: disagree("importance"), invalid: invalid("importance")}),
          claimHint(claim, "importance"))),
      claimComparison(row, r));
  }

  function provenanceNote() {
    const index = current;
    if (consolidation) return null;
    if (!hints.length) return el("p", {className: "fc-provenance"}, "No machine suggestion for this item: decompose the sentence yourself.");
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

  function renderEditor() {
    const i = current;
    const sentence = sentences[i];
    const hint = hints[i] || {};
    const path = `sentences[${i}]`;
    const disagree = (field) => consolidation && disagreed.has(`${path}.${field}`);
    const invalid = (field) => errors.some((e) => e.field === `${path}.${field}`);
    const rows = alignment[i] || [];
    const inGold = new Set(sentence.claims.map((c) => rowOf.get(c)).filter((r) => r !== undefined));
    const leftOut = consolidation ? rows.map((_, r) => r).filter((r) => !inGold.has(r)) : [];

    /* A sentence label: its choices (and more after them), the hint, each annotator's value. */
    const labelField = (key, label, options, more = null) => {
      const pick = (v) => setSentence({[key]: v});
      return el("div", {className: classes("fc-field", disagree(key) && "disagree")},
        el("div", {className: "fc-choice-line"},
          el("span", {className: "fc-field-label"}, label),
          el("div", {className: "fc-choice-options"},
            choices(options, sentence[key], pick, {className: `fc-${key}`, invalid: invalid(key)}),
            suggested(hint[key], readable[key]),
            more)),
        comparison(key, (v) => el("div", {className: "fc-their-value"}, readable[key](v)), pick));
    };

    const decontext = el("textarea", {
      className: classes("fc-decontext", invalid("decontext") && "invalid"), rows: 2, value: sentence.decontext, disabled: readOnly,
      id: "fc-decontext", placeholder: "the sentence rewritten to be understood without the rest of the response",
      oninput: (event) => { sentence.decontext = event.target.value; autosize(event.target); changed({rerender: false}); },
    });
    const headTools = readOnly ? null : consolidation
      ? el("span", {className: "fc-head-tools"}, annotations.map((annotation, k) => el("button", {type: "button", className: "small fc-use-sentence",
        "data-slot": annotation.slot, onclick: () => useWholeSentence(k)}, `Use ${annotation.slot}'s whole sentence`)))
      : el("span", {className: "fc-head-tools"},
        undo && undo.index === i ? el("button", {type: "button", className: "small fc-undo", onclick: undoReset}, "Undo reset") : null,
        hints[i] ? el("button", {type: "button", className: "small fc-reset", title: "restore the suggested decontextualised sentence and claims; clears your judgements of this sentence",
          onclick: resetToSuggestion}, "Reset to suggestion") : null);

    // (replaceChildren would write null as text: skip the absent parts)
    editorEl.replaceChildren(...[
      el("div", {className: "fc-editor-head"},
        el("h2", {}, `Sentence ${i + 1} `, el("small", {}, `of ${sentences.length}`)),
        el("span", {className: "spacer"}),
        headTools),
      el("blockquote", {className: "fc-original"}, texts[i]),
      provenanceNote(),
      el("p", {className: "fc-missing", role: "status"}),

      el("div", {className: classes("fc-field", disagree("decontext") && "disagree")},
        el("label", {className: "fc-field-label", for: "fc-decontext"}, "Decontextualised sentence ", el("kbd", {}, "d")),
        decontext,
        comparison("decontext", (v) => el("div", {className: "fc-their-text"}, v || "(empty)"), (v) => setSentence({decontext: v}))),

      labelField("importance", "Importance", SENTENCE_IMPORTANCE),
      labelField("checkworthy", "Checkworthy", CHECKWORTHY, [
        el("span", {className: "fc-or"}, "not checkworthy as:"),
        choices(CHECKWORTHY_MORE, sentence.checkworthy, (v) => setSentence({checkworthy: v}),
          {className: "fc-checkworthy fc-checkworthy-more", invalid: invalid("checkworthy")})]),

      el("section", {className: classes("fc-claims", disagree("claims") && "disagree")},
        el("h3", {className: "fc-claims-title"}, "Claims ",
          el("small", {}, consolidation
            ? annotations.map((a) => `${a.slot}: ${a.payload.sentences[i].claims.length}`).join(" · ") + " — one row per aligned claim"
            : "atomic, each understandable on its own")),
        sentence.claims.length
          ? el("ol", {className: "fc-claim-list"}, sentence.claims.map(renderClaim))
          : el("p", {className: "hint fc-no-claims"}, "No claims: this sentence makes no claim, or press a to add one."),
        leftOut.length ? el("div", {className: "fc-left-out"},
          el("h4", {}, "Rows left out of the gold record"),
          leftOut.map((row) => el("div", {className: "fc-left-out-row", "data-row": row}, claimComparison(row, undefined)))) : null,
        readOnly ? null : el("button", {type: "button", className: "fc-add", onclick: () => addClaim()}, "Add claim ", el("kbd", {}, "a"))),
    ].filter(Boolean));
    fillMissing(editorEl.querySelector(".fc-missing"));
    editorEl.querySelectorAll("textarea").forEach(autosize);
  }

  // -- submit and keys -------------------------------------------------------------------

  async function submit() {
    if (readOnly) return;
    const todo = common.incomplete(sentences.map(missing), "sentence", "sentences");
    if (todo) {
      select(todo.index);
      errors = [todo.error];
      renderErrors();
      renderList();
      return;
    }
    await submitAndContinue(saver, submitButton, state.next_url);
  }

  function onKey(event) {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.isComposing) return;
    if (target.tagName === "BUTTON" && (event.key === "Enter" || event.key === " ")) return;
    // Alt+↑/↓ move the selected claim
    if (event.altKey) {
      if (event.key === "ArrowUp" || event.key === "ArrowDown") {
        event.preventDefault();
        moveClaim(event.key === "ArrowUp" ? -1 : 1);
      }
      return;
    }
    const claim = claimCursor[current];
    const navigation = {
      j: () => select(current + 1), ArrowDown: () => select(current + 1),
      k: () => select(current - 1), ArrowUp: () => select(current - 1),
      "]": () => selectClaim(claim + 1), "[": () => selectClaim(claim - 1),
    };
    const edits = {
      d: focusDecontext,
      Enter: focusClaimText,
      a: () => addClaim(),
      Delete: () => removeClaim(),
    };
    if (consolidation) {
      // Shift+A, Shift+B: take that annotator's whole sentence
      (state.annotations || []).forEach((annotation, k) => { edits[annotation.slot] = () => useWholeSentence(k); });
    }
    for (const [value, , key] of SENTENCE_IMPORTANCE) edits[key] = () => setSentence({importance: value});
    for (const [value, , key] of [...CHECKWORTHY, ...CHECKWORTHY_MORE]) edits[key] = () => setSentence({checkworthy: value});
    for (const [value, , key] of CATEGORIES) edits[key] = () => setClaim(claim, {category: value});
    for (const [value, , key] of CLAIM_IMPORTANCE) edits[key] = () => setClaim(claim, {importance: value});
    const action = navigation[event.key] || (readOnly ? null : edits[event.key]);
    if (action) { event.preventDefault(); action(); }
  }

  // -- start -----------------------------------------------------------------------------

  // A consolidator starts at the first sentence with a disagreement, an annotator at the top.
  current = common.firstDisagreement(disagreed, "sentences");
  if (sentences.length) {
    renderEditor();
    renderList();
  } else {
    editorEl.replaceChildren(el("p", {className: "hint"}, "This item has no sentences."));
  }
  updateCompleteness();
  const legend = consolidation ? [...KEY_LEGEND, ["⇧A / ⇧B", "use A's / B's whole sentence"]] : KEY_LEGEND;
  endPage({state, parts, submit, onKey, legend, consolidation});
}

start(pageState, {consolidation: consolidating});

