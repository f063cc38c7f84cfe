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
import * as common from "./common.js";
import {classes, el, isHttpUrl, labelOf, suggested, theirBox, withKeys} from "./common.js";
import {pageSaver} from "./save.js";
import {endPage, submitAndContinue} from "./ending.js";
import {legendLine} from "./keys.js";
import * as WordDiff from "./diff.js";
import {searchEvidence, searchResults} from "./evidence_search.js";
import {MANUAL, USES_IT, blankClaim, blankManual, missing, normalise, plural, readablePath, usedLabel} from "./factcheck_step2_model.js";

// The page state, with the kind's label lists (state.rules, annotation/kinds/page_rules.py);
// the page adds a key to each entry, in list order.
const {state: pageState, consolidation: consolidating} = common.pageState();
const RULES = pageState.rules.choices;
const STANCES = withKeys(RULES.stance, ["1", "2", "3", "4"]);
const RELIABLE = withKeys(RULES.reliable, ["r", "R"]);
const DECIDED = withKeys(RULES.decided, ["d", "D"]);
const FACTUALITY = withKeys(RULES.factuality, ["t", "f", "u"]);
const NEEDS_EDIT = withKeys(RULES.needs_edit, ["Y", "N", "U"]);
// The annotator's own evidence: the same reliability keys as a passage, and a / ⇧A for "sufficient alone".
const MANUAL_RELIABLE = withKeys(RULES.manual_reliable, ["r", "R"]);
const SUFFICIENT = withKeys(RULES.sufficient, ["a", "A"]);
// Factuality follows the edit decision in every released claim (server rule 6): one sets the other.
const FACTUALITY_FOR_EDIT = pageState.rules.factuality_for_edit;
const COMPLETENESS = pageState.rules.completeness;
const EDIT_FOR_FACTUALITY = Object.fromEntries(Object.entries(FACTUALITY_FOR_EDIT).map(([edit, factuality]) => [factuality, edit]));

const KEY_LEGEND = [
  ["] / [", "next / previous claim"],
  ["j / ↓, k / ↑", "next / previous passage (then your own evidence)"],
  legendLine(STANCES, "stance of the passage"),
  ["r / ⇧R", "the passage's (or your evidence's) source is reliable / not reliable"],
  ["a / ⇧A", "your evidence is sufficient alone: yes / no"],
  ["g", "the correction uses this passage or evidence (or not)"],
  legendLine(DECIDED, "the evidence decides the claim"),
  ["t / f / u", "the claim is true / false / unknown"],
  legendLine(NEEDS_EDIT, "needs an edit"),
  ["s", "search for evidence"],
  ["m", "add evidence by hand (paste text and URL)"],
  ["c", "edit the correction (the pre-filled claim is selected: type to replace it, ← / → to edit it)"],
  ["Esc", "leave a text field"],
  ["Ctrl+Enter", "submit"],
];

function start(state, options = {}) {
  const consolidation = Boolean(options.consolidation);
  const readOnly = Boolean(state.read_only);
  const claims = state.content.claims || [];
  const answers = claims.map((claim, i) => blankClaim(claim, (state.payload.claims || [])[i]));
  const provenance = state.provenance || {};
  const previous = state.previous || null;
  const {disagreed, annotations, alignment} = common.theirAnswers(state);

  const listEl = document.getElementById("claims");
  const parts = common.pageParts();
  const {editorEl, errorsEl, completenessEl, submitButton} = parts;

  let current = 0;
  const passageCursor = claims.map(() => 0);
  const searches = claims.map(() => ({query: "", state: null, results: [], problems: [], error: ""}));
  let errors = [];

  const saver = pageSaver({state, consolidation, payload: () => ({claims: answers}),
    onErrors: (list) => { errors = list; renderErrors(); renderEditor(); renderList(); }});

  const choices = (options, value, onPick, settings = {}) => common.choices(options, value, onPick, {...settings, readOnly});

  // -- changes ---------------------------------------------------------------------------

  function changed({rerender = true} = {}) {
    if (rerender) renderEditor();
    renderList();
    updateCompleteness();
    saver.schedule();
  }

  function setAnswer(patch) {
    if (readOnly) return;
    const answer = answers[current];
    Object.assign(answer, patch);
    if ("needs_edit" in patch && patch.needs_edit) answer.factuality = FACTUALITY_FOR_EDIT[patch.needs_edit];
    if ("factuality" in patch && patch.factuality) answer.needs_edit = EDIT_FOR_FACTUALITY[patch.factuality];
    changed();
  }

  function setPassage(k, field, value) {
    const answer = answers[current];
    if (readOnly || k < 0 || k >= answer.stances.length) return;
    passageCursor[current] = k;
    answer[field][k] = value;
    changed();
  }

  function toggleUsed(value) {
    if (readOnly) return;
    const used = answers[current].used_evidence;
    const at = used.indexOf(value);
    if (at >= 0) used.splice(at, 1); else used.push(value);
    changed();
  }

  function addManual(entry = {}, {focus = true} = {}) {
    if (readOnly) return;
    answers[current].manual_evidence.push(blankManual(entry));
    passageCursor[current] = answers[current].stances.length + answers[current].manual_evidence.length - 1;
    changed();
    if (focus) {
      const fields = editorEl.querySelectorAll(".fc2-manual");
      const last = fields[fields.length - 1];
      last?.querySelector(entry.text ? ".fc2-manual-url" : ".fc2-manual-text")?.focus();
      last?.scrollIntoView({block: "nearest"});
    }
  }

  function removeManual(index) {
    const answer = answers[current];
    if (readOnly) return;
    answer.manual_evidence.splice(index, 1);
    passageCursor[current] = Math.max(0, Math.min(passageCursor[current], answer.stances.length + answer.manual_evidence.length - 1));
    // "manual:N" references follow the entries they name
    answer.used_evidence = answer.used_evidence.flatMap((value) => {
      if (typeof value !== "string") return [value];
      const n = Number(value.slice(MANUAL.length));
      if (n === index) return [];
      return [n > index ? `${MANUAL}${n - 1}` : value];
    });
    changed();
  }

  // -- search ----------------------------------------------------------------------------

  async function runSearch(index, query) {
    await searchEvidence(searches[index], {url: state.search_url, query: normalise(query), claim: claims[index].text,
      render: renderSearch});
  }

  function focusSearch() {
    const field = editorEl.querySelector(".fc2-search-query");
    field?.focus();
    field?.select();
  }

  // -- navigation ------------------------------------------------------------------------

  function select(index) {
    if (!claims.length) return;
    const next = Math.max(0, Math.min(claims.length - 1, index));
    const moved = next !== current;
    current = next;
    renderEditor();
    renderList();
    listEl.querySelector(`[data-claim="${current}"]`)?.scrollIntoView({block: "nearest"});
    if (moved) editorEl.scrollIntoView({block: "start"});
  }

  /* The cursor runs over the retrieved passages, then the annotator's own evidence. */
  function selectPassage(k) {
    const count = answers[current].stances.length + answers[current].manual_evidence.length;
    if (!count) return;
    passageCursor[current] = Math.max(0, Math.min(count - 1, k));
    const nodes = editorEl.querySelectorAll(".fc2-passages > .fc2-passage, .fc2-manuals > .fc2-manual");
    nodes.forEach((node, r) => node.classList.toggle("current", r === passageCursor[current]));
    nodes[passageCursor[current]]?.scrollIntoView({block: "nearest"});
  }

  /* Under the cursor: ["passage", k] or ["manual", m]. */
  function underCursor() {
    const k = passageCursor[current];
    const passages = answers[current].stances.length;
    return k < passages ? ["passage", k] : ["manual", k - passages];
  }

  function setManual(m, patch) {
    const entry = answers[current].manual_evidence[m];
    if (readOnly || !entry) return;
    Object.assign(entry, patch);
    changed();
  }

  function focusCorrection() {
    const field = editorEl.querySelector(".fc2-correction");
    if (!field || field.disabled) return;
    field.focus();
    // Still the pre-filled claim: selected, so typing replaces it (← / → to edit it instead).
    if (field.value === (claims[current] || {}).text) field.select();
    else field.setSelectionRange(field.value.length, field.value.length);
  }

  // -- consolidation ---------------------------------------------------------------------

  const theirClaim = (annotation) => (annotation.payload.claims || [])[current] || {};
  const isDisagreed = (path) => consolidation && disagreed.has(path);

  /* Compact "A: Refutes · B: Irrelevant" buttons: a click takes that annotator's answer. */
  function theirValues(values, show, pick) {
    if (!consolidation) return null;
    const agreed = values.every((v) => JSON.stringify(v) === JSON.stringify(values[0]));
    return el("div", {className: classes("fc2-theirs", agreed && "agreed")},
      annotations.map((annotation, k) => el("button", {
        type: "button", className: "small fc-use", "data-slot": annotation.slot, disabled: readOnly,
        title: `use ${annotation.annotator}'s answer${annotation.role === "third_rater" ? " (third rater)" : ""}`,
        onclick: () => pick(values[k]),
      }, `${annotation.slot}: ${show(values[k])}`)));
  }

  /* An annotator's used evidence in the consolidation's numbering of manual evidence. */
  function theirUsed(annotationIndex) {
    const rows = alignment[current] || [];
    return (theirClaim(annotations[annotationIndex]).used_evidence || []).map((value) => {
      if (typeof value !== "string") return value;
      const own = Number(value.slice(MANUAL.length));
      const row = rows.findIndex((r) => r[annotationIndex] === own);
      return row >= 0 ? `${MANUAL}${row}` : value;
    });
  }

  function manualSources(row) {
    const rows = alignment[current] || [];
    if (!consolidation || !rows[row]) return null;
    const from = annotations.filter((_, k) => rows[row][k] !== null && rows[row][k] !== undefined).map((a) => a.slot);
    return el("span", {className: "fc2-from"}, from.length ? `given by ${from.join(", ")}` : "added here");
  }

  // -- rendering -------------------------------------------------------------------------

  function errorsAt(path) {
    return errors.filter((e) => e.field === path || (e.field || "").startsWith(`${path}.`) || (e.field || "").startsWith(`${path}[`));
  }
  const invalid = (path) => errors.some((e) => e.field === path);

  /* The response's sentences in order, each with its claims; the claims step 2 does not check are grey. */
  function renderList() {
    const byPosition = new Map(claims.map((c, i) => [`${c.sentence}/${c.claim}`, i]));
    const claimButton = (i) => {
      const done = !missing(COMPLETENESS, answers[i]).length;
      const disputes = consolidation ? [...disagreed].filter((p) => p.startsWith(`claims[${i}].`) || p.startsWith(`claims[${i}]`)).length : 0;
      return el("li", {className: classes("fc2-claim-item", done ? "done" : "todo", i === current && "current",
        errorsAt(`claims[${i}]`).length && "invalid")},
        el("button", {type: "button", className: "fc2-claim-pick", "data-claim": i, "aria-current": i === current ? "true" : null,
          onclick: () => select(i)},
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

  function updateCompleteness() {
    const done = answers.filter((answer) => !missing(COMPLETENESS, answer).length).length;
    completenessEl.textContent = `${done}/${claims.length} claims done`;
    if (!readOnly) {
      const ready = done === claims.length;
      submitButton.setAttribute("aria-disabled", ready ? "false" : "true");
      submitButton.title = ready ? "Ctrl+Enter" : "Every claim must be done first (Ctrl+Enter shows what is missing)";
    }
    const node = editorEl.querySelector(".fc-missing");
    if (node) fillMissing(node);
  }

  function fillMissing(node) {
    if (!claims.length) return;
    const lacks = missing(COMPLETENESS, answers[current]);
    node.classList.toggle("done", !lacks.length);
    node.replaceChildren(lacks.length ? `Still to do: ${lacks.join("; ")}` : "This claim is done.");
  }

  function renderErrors() {
    errorsEl.replaceChildren(...errors.map((e) => el("li", {}, e.field ? `${readablePath(e.field)}: ${e.message}` : e.message)));
  }

  function stanceHint(passage) {
    const hint = passage.stance_hint;
    if (!hint || !hint.label) return null;
    const by = provenance.stance?.model || provenance.llm?.model || "the model";
    return suggested(hint.label, (v) => labelOf(STANCES, v), `suggested by ${by}: not selected for you`);
  }

  function renderPassage(passage, k) {
    const answer = answers[current];
    const path = `claims[${current}]`;
    const usedOn = answer.used_evidence.includes(k);
    const title = passage.title || passage.url || "untitled source";
    return el("li", {className: classes("fc2-passage", k === passageCursor[current] && "current"), "data-index": k,
      onclick: () => selectPassage(k)},
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
        choices(STANCES, answer.stances[k], (v) => setPassage(k, "stances", v),
          {className: "fc2-stance", disagree: isDisagreed(`${path}.stances[${k}]`), invalid: invalid(`${path}.stances[${k}]`)}),
        consolidation ? null : stanceHint(passage)),
      theirValues(annotations.map((a) => (theirClaim(a).stances || [])[k] ?? null), (v) => labelOf(STANCES, v),
        (v) => setPassage(k, "stances", v)),
      el("div", {className: "fc-choice-line"},
        el("span", {className: "fc-choice-label"}, "Source"),
        choices(RELIABLE, answer.reliable[k], (v) => setPassage(k, "reliable", v),
          {className: "fc2-reliable", disagree: isDisagreed(`${path}.reliable[${k}]`), invalid: invalid(`${path}.reliable[${k}]`)}),
        el("label", {className: "fc2-used"},
          el("input", {type: "checkbox", checked: usedOn, disabled: readOnly, onchange: () => toggleUsed(k)}),
          " correction uses it ", el("kbd", {}, "g"))),
      theirValues(annotations.map((a) => (theirClaim(a).reliable || [])[k] ?? null), (v) => labelOf(RELIABLE, v),
        (v) => setPassage(k, "reliable", v)));
  }

  function renderManual(entry, m) {
    const path = `claims[${current}].manual_evidence[${m}]`;
    const value = `${MANUAL}${m}`;
    const set = (patch, rerender = true) => { if (readOnly) return; Object.assign(entry, patch); changed({rerender}); };
    const input = (key, attrs) => el(attrs.tag || "input", {
      ...attrs, tag: null, value: entry[key], disabled: readOnly,
      className: classes(attrs.className, invalid(`${path}.${key}`) && "invalid"),
      oninput: (event) => set({[key]: event.target.value}, false),
    });
    const at = answers[current].stances.length + m;
    return el("li", {className: classes("fc2-manual", isDisagreed(path) && "disagree", at === passageCursor[current] && "current"),
      onclick: () => selectPassage(at)},
      el("div", {className: "fc2-passage-head"},
        el("span", {className: "fc2-rank"}, `Your evidence ${m + 1}`),
        manualSources(m),
        el("span", {className: "spacer"}),
        readOnly ? null : el("button", {type: "button", className: "small fc-remove", onclick: () => removeManual(m)}, "Remove")),
      input("text", {tag: "textarea", rows: 3, className: "fc2-manual-text", "aria-label": `Your evidence ${m + 1}, text`,
        placeholder: "the passage that is evidence, quoted"}),
      el("div", {className: "fc2-manual-fields"},
        el("label", {}, "URL ", input("url", {type: "url", className: "fc2-manual-url", placeholder: "https://…"})),
        el("label", {}, "Query ", input("query", {type: "text", className: "fc2-manual-query", placeholder: "what you searched for"}))),
      el("div", {className: "fc-choice-line"},
        el("span", {className: "fc-choice-label"}, "Reliable"),
        choices(MANUAL_RELIABLE, entry.reliable, (v) => set({reliable: v}),
          {className: "fc2-manual-reliable", disagree: isDisagreed(`${path}.reliable`), invalid: invalid(`${path}.reliable`)}),
        el("span", {className: "fc-choice-label"}, "Sufficient alone"),
        choices(SUFFICIENT, entry.sufficient, (v) => set({sufficient: v}),
          {className: "fc2-manual-sufficient", disagree: isDisagreed(`${path}.sufficient`), invalid: invalid(`${path}.sufficient`)}),
        el("label", {className: "fc2-used"},
          el("input", {type: "checkbox", checked: answers[current].used_evidence.includes(value), disabled: readOnly,
            onchange: () => toggleUsed(value)}), ` ${USES_IT}`)));
  }

  function renderSearch() {
    const box = editorEl.querySelector(".fc2-search-results");
    if (!box) return;
    const search = searches[current];
    const known = new Set(answers[current].manual_evidence.map((m) => `${m.url} ${normalise(m.text)}`));
    box.replaceChildren(...searchResults(search, {
      added: (result) => known.has(`${result.url} ${normalise(result.text)}`), readOnly,
      onAdd: (result) => { addManual({text: result.text, url: result.url, query: search.query}, {focus: false}); renderSearch(); },
    }));
  }

  function verdictField(key, title, options, pick) {
    const path = `claims[${current}].${key}`;
    return el("div", {className: classes("fc-field", isDisagreed(path) && "disagree")},
      el("div", {className: "fc-choice-line"},
        el("span", {className: "fc-field-label"}, title),
        choices(options, answers[current][key], pick, {className: `fc2-${key}`, invalid: invalid(path)})),
      theirValues(annotations.map((a) => theirClaim(a)[key] ?? null), (v) => labelOf(options, v), pick));
  }

  function renderEditor() {
    if (!claims.length) return;
    const claim = claims[current];
    const answer = answers[current];
    const path = `claims[${current}]`;
    const search = searches[current];
    const sentenceText = previous?.gold?.sentences?.[claim.sentence]?.decontext || previous?.content?.sentences?.[claim.sentence];
    const queries = claim.queries?.queries || claim.queries || [];
    const hintCount = claim.evidence.filter((p) => p.stance_hint && p.stance_hint.label).length;

    const correction = el("textarea", {
      className: classes("fc2-correction", invalid(`${path}.correction`) && "invalid", isDisagreed(`${path}.correction`) && "disagree"),
      rows: 2, value: answer.correction, disabled: readOnly, id: "fc2-correction",
      oninput: (event) => {
        answer.correction = event.target.value;
        diffEl.replaceChildren(WordDiff.render(claim.text, answer.correction));
        changed({rerender: false});
      },
    });
    const diffEl = el("div", {className: "fc2-diff"}, WordDiff.render(claim.text, answer.correction));

    editorEl.replaceChildren(...[
      el("div", {className: "fc-editor-head"},
        el("h2", {}, `Claim ${current + 1} `, el("small", {}, `of ${claims.length} · sentence ${claim.sentence + 1}`))),
      sentenceText ? el("p", {className: "fc2-context"}, "Sentence: ", sentenceText) : null,
      el("blockquote", {className: "fc-original fc2-claim"}, claim.text),
      el("p", {className: "fc-provenance"},
        claim.evidence.length ? `${plural(claim.evidence.length, "passage")} ranked` : "No evidence was retrieved",
        queries.length ? ` for the queries ${queries.map((q) => `“${q}”`).join(", ")}` : "",
        hintCount && !consolidation ? ". Stance suggestions are shown beside the choices, never selected." : ".",
        provenance.evidence?.sources?.length ? ` Sources: ${provenance.evidence.sources.join(", ")}.` : ""),
      ...(claim.problems || []).map((problem) => el("p", {className: "warning"}, problem)),
      el("p", {className: "fc-missing", role: "status"}),

      el("section", {className: "fc2-evidence"},
        el("h3", {}, "Evidence"),
        claim.evidence.length ? el("ol", {className: "fc2-passages"}, claim.evidence.map(renderPassage))
          : el("p", {className: "hint"}, "No passage to judge: search below or add the evidence you find.")),

      verdictField("decided", "Can the claim be decided from this evidence?", DECIDED, (v) => setAnswer({decided: v})),

      el("section", {className: "fc2-search"},
        el("h3", {}, "Search for evidence ", el("kbd", {}, "s")),
        el("form", {className: "fc2-search-form", onsubmit: (event) => {
          event.preventDefault();
          runSearch(current, event.target.elements.query.value);
        }},
        el("input", {type: "search", name: "query", className: "fc2-search-query", value: search.query || claim.text,
          "aria-label": "search query", placeholder: "search the project's corpora and the web",
          oninput: (event) => { search.query = event.target.value; }}),
        el("button", {type: "submit"}, "Search")),
        el("div", {className: "fc2-search-results"})),

      el("section", {className: classes("fc2-manual-section", isDisagreed(`${path}.manual_evidence`) && "disagree")},
        el("h3", {}, "Evidence you found ", el("small", {}, "query, URL, reliable, sufficient alone (Appendix D.4)")),
        answer.manual_evidence.length ? el("ol", {className: "fc2-manuals"}, answer.manual_evidence.map(renderManual)) : null,
        readOnly ? null : el("button", {type: "button", className: "fc2-add-manual", onclick: () => addManual()},
          "Add evidence by hand ", el("kbd", {}, "m"))),

      verdictField("factuality", "The claim is", FACTUALITY, (v) => setAnswer({factuality: v})),
      verdictField("needs_edit", "Needs an edit", NEEDS_EDIT, (v) => setAnswer({needs_edit: v})),

      el("div", {className: classes("fc-field", isDisagreed(`${path}.correction`) && "disagree")},
        el("label", {className: "fc-field-label", for: "fc2-correction"}, "Corrected claim ", el("kbd", {}, "c")),
        correction,
        diffEl,
        consolidation ? common.compareRow(annotations.map((a) => theirBox(a,
          el("div", {className: "fc-their-text"}, theirClaim(a).correction || "(empty)"),
          readOnly ? null : el("button", {type: "button", className: "small fc-use",
            onclick: () => setAnswer({correction: theirClaim(a).correction || ""})}, `Use ${a.slot}`))),
        annotations.every((a) => normalise(theirClaim(a).correction) === normalise(theirClaim(annotations[0]).correction)),
        annotations.length) : null),

      el("div", {className: classes("fc-field fc2-used-summary", isDisagreed(`${path}.used_evidence`) && "disagree",
        invalid(`${path}.used_evidence`) && "invalid")},
        el("span", {className: "fc-field-label"}, "The correction uses "),
        answer.used_evidence.length ? answer.used_evidence.map(usedLabel).join(", ")
          : el("span", {className: "hint"}, "nothing yet: tick “correction uses it” on the evidence"),
        theirValues(annotations.map((_, k) => theirUsed(k)), (v) => (v.length ? v.map(usedLabel).join(", ") : "none"),
          (v) => setAnswer({used_evidence: [...v].filter((x) => typeof x !== "string"
            || Number(x.slice(MANUAL.length)) < answers[current].manual_evidence.length)}))),
    ].filter(Boolean));
    fillMissing(editorEl.querySelector(".fc-missing"));
    renderSearch();
  }

  // -- submit and keys -------------------------------------------------------------------

  async function submit() {
    if (readOnly) return;
    const todo = common.incomplete(answers.map((answer) => missing(COMPLETENESS, answer)), "claim", "claims");
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
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (target.tagName === "BUTTON" && (event.key === "Enter" || event.key === " ")) return;
    const k = passageCursor[current];
    const navigation = {
      "]": () => select(current + 1), "[": () => select(current - 1),
      j: () => selectPassage(k + 1), ArrowDown: () => selectPassage(k + 1),
      k: () => selectPassage(k - 1), ArrowUp: () => selectPassage(k - 1),
      s: focusSearch,
    };
    const [what, at] = underCursor();
    const edits = {g: () => toggleUsed(what === "manual" ? `${MANUAL}${at}` : at), m: () => addManual(), c: focusCorrection};
    if (what === "passage") {
      for (const [value, , key] of STANCES) edits[key] = () => setPassage(at, "stances", value);
      for (const [value, , key] of RELIABLE) edits[key] = () => setPassage(at, "reliable", value);
    } else {
      for (const [value, , key] of MANUAL_RELIABLE) edits[key] = () => setManual(at, {reliable: value});
      for (const [value, , key] of SUFFICIENT) edits[key] = () => setManual(at, {sufficient: value});
    }
    for (const [value, , key] of DECIDED) edits[key] = () => setAnswer({decided: value});
    for (const [value, , key] of FACTUALITY) edits[key] = () => setAnswer({factuality: value});
    for (const [value, , key] of NEEDS_EDIT) edits[key] = () => setAnswer({needs_edit: value});
    const action = navigation[event.key] || (readOnly ? null : edits[event.key]);
    if (action) { event.preventDefault(); action(); }
  }

  // -- start -----------------------------------------------------------------------------

  current = common.firstDisagreement(disagreed, "claims");
  if (claims.length) {
    renderEditor();
  } else {
    editorEl.replaceChildren(el("p", {className: "hint"},
      "This item has no checkworthy factual claim to verify: submit to confirm."));
  }
  renderList();
  updateCompleteness();
  endPage({state, parts, submit, onKey, legend: KEY_LEGEND, consolidation});
}

start(pageState, {consolidation: consolidating});

