/*
 * FELM segment labelling: the annotator's page and, with {consolidation: true}, the consolidator's.
 * The page's state is one object (`page`, made in start()); each region has its render function
 * and every change goes through changed(page, index), the page's one save hook.
 */
import * as common from "../js/common.js";
import {el, withKeys} from "../js/common.js";
import {pageSaver} from "../js/save.js";
import {endPage, submitAndContinue} from "../js/ending.js";
import {entryRules, lacking} from "../js/completeness.js";
import {pageKeys, showLegendKeys} from "../js/keys.js";
import {badLink, findSegment, readableField, segmentOf} from "./felm_model.js";

/*
 * The response on the left with each segment wrapped in a span, so the current one can be
 * highlighted there. Segments are looked for in order; one not found (an LLM segmenter may
 * reword) is left unmarked. Returns the spans by segment index.
 */
function markSegments(box, response, texts) {
  if (!box || typeof response !== "string") return [];
  const text = response.replace(/\r\n?/g, "\n");  // as linebreaksbr showed it
  const spans = [];
  const parts = [];
  let at = 0;
  texts.forEach((segment, i) => {
    const match = segment.trim() ? findSegment(text, segment, at) : null;
    if (!match) return;
    parts.push(text.slice(at, match.index));
    spans[i] = el("span", {className: "response-segment", "data-index": i, "data-number": i + 1}, match[0]);
    parts.push(spans[i]);
    at = match.index + match[0].length;
  });
  if (!parts.length) return spans;
  parts.push(text.slice(at));
  box.replaceChildren(...parts);
  box.classList.add("segmented");
  return spans;
}

/* Scroll the sticky source panel (not the page) so the highlighted segment is in it. */
function revealInSource(span) {
  const box = span?.closest(".source");
  if (!box || box.scrollHeight <= box.clientHeight) return;
  const outer = box.getBoundingClientRect();
  const inner = span.getBoundingClientRect();
  if (inner.top < outer.top + 8) box.scrollTop -= outer.top + 8 - inner.top;
  else if (inner.bottom > outer.bottom - 8) box.scrollTop += Math.min(inner.bottom - outer.bottom + 8, inner.top - outer.top - 8);
}

/* A segment without text (released files have some): nothing to decide, never required. */
const isEmpty = (page, index) => !String(page.state.content.segments[index] ?? "").trim();

/* What a segment still lacks before a submit: [{field, name}], e.g. error type and reason. By
 * the kind's completeness rules (state.rules.completeness), "$text" reading the segment's text;
 * a link typed in its box and not a link comes first. */
function lacks(page, index) {
  const problem = isEmpty(page, index) ? null : badLink(page.draftRefs[index]);
  if (problem) return [{field: "refs", name: problem}];
  return lacking(page.segmentRules, page.segments[index], {text: page.state.content.segments[index]});
}

const missing = (page, index) => lacks(page, index).map((lack) => lack.name);

/* The one path of every change: redraw the segment (unless typed in place), the counts, and save. */
function changed(page, index, {rerender = true} = {}) {
  if (rerender && index !== null) {
    renderSegment(page, index);
    // The segment may have grown (error details): keep the one being worked on in view.
    if (index === page.current) page.list.children[index].scrollIntoView({block: "nearest"});
  }
  renderCompleteness(page);
  page.saver.schedule();
}

function change(page, index, patch) {
  const segment = page.segments[index];
  Object.assign(segment, patch);
  if (segment.label === true) segment.error_type = null;
  changed(page, index);
}

function renderErrors(page, errors) {
  const {errorsEl} = page.parts;
  errorsEl.replaceChildren(...errors.map((e) => {
    const index = segmentOf(e.field);
    if (index === null) return el("li", {}, e.field ? `${readableField(e.field)}: ${e.message}` : e.message);
    return el("li", {}, el("button", {type: "button", className: "link", onclick: () => goTo(page, index)},
      readableField(e.field)), `: ${e.message}`);
  }));
  page.list.querySelectorAll(".invalid").forEach((n) => n.classList.remove("invalid"));
  for (const e of errors) {
    const index = segmentOf(e.field);
    if (index !== null) page.list.children[index]?.classList.add("invalid");
  }
  fitFoot(page);
}

/* Keyboard scrolling keeps the current segment clear of the save bar and the errors above it. */
function fitFoot(page) {
  const foot = page.parts.errorsEl.closest(".panel-foot");
  if (foot) page.list.style.setProperty("--foot-height", `${foot.offsetHeight + 8}px`);
}

/* After a refused submit: the segments not done, listed above the list (shrinking as they get done). */
function listIncomplete(page) {
  const notDone = page.segments.map((_, i) => [i, missing(page, i)]).filter(([, what]) => what.length);
  if (!notDone.length) page.listingIncomplete = false;
  renderErrors(page, notDone.map(([i, what]) => ({field: `segments[${i}]`,
    message: `${what.join(" and ")} ${what.length > 1 ? "are" : "is"} missing`})));
  // Above the list, not in the save status, which the next autosave overwrites.
  if (notDone.length) {
    page.parts.errorsEl.prepend(el("li", {className: "summary"},
      `${page.consolidation ? "Gold record not saved" : "Not submitted"}: ${notDone.length} segment${notDone.length === 1 ? " is" : "s are"} not done.`));
    fitFoot(page);
  }
  return notDone;
}

function renderCompleteness(page) {
  const {segments, list} = page;
  const done = segments.filter((_, i) => !missing(page, i).length).length;
  page.parts.completenessEl.textContent = `${done}/${segments.length} segments complete`;
  Array.from(list.children).forEach((node, i) => node.classList.toggle("complete", !missing(page, i).length));
  page.responseSpans.forEach((span, i) => span?.classList.toggle("has-error", segments[i].label === false));
  if (page.listingIncomplete) listIncomplete(page);
}

function select(page, index) {
  page.current = Math.max(0, Math.min(page.segments.length - 1, index));
  Array.from(page.list.children).forEach((node, i) => node.classList.toggle("current", i === page.current));
  page.list.children[page.current]?.scrollIntoView({block: "nearest"});
  page.responseSpans.forEach((span, i) => span?.classList.toggle("current", i === page.current));
  revealInSource(page.responseSpans[page.current]);
}

/* From the list of incomplete segments: that segment, focus on what it lacks. */
function goTo(page, index) {
  select(page, index);
  const node = page.list.children[index];
  const what = lacks(page, index)[0]?.field;
  const target = {label: ".label-correct", error_type: ".error-type", comment: ".comment"}[what];
  (target && node.querySelector(target) || node.querySelector("button"))?.focus();
}

/* r / l, or a click on the folded control: unfold the note or the references and type there. */
function unfold(page, index, part) {
  page.unfolded[index][part] = true;
  renderSegment(page, index);
  page.list.children[index].querySelector(part === "note" ? ".comment" : ".ref-input")?.focus();
}

/* Consolidation: each annotator's answer for the segment, to take. */
function comparison(page, index) {
  if (!page.consolidation) return null;
  return el("div", {className: "comparison"}, page.state.annotations.map((annotation) => {
    const theirs = annotation.payload.segments[index];
    const label = theirs.label === null ? "–" : theirs.label ? "correct" : "error";
    return el("div", {className: "their", "data-slot": annotation.slot},
      el("b", {}, `${annotation.slot} (${annotation.annotator}): `),
      el("span", {className: "their-label"}, label),
      theirs.error_type ? el("span", {className: "their-type"}, ` · ${page.typeLabel[theirs.error_type] || theirs.error_type}`) : null,
      theirs.comment ? el("div", {className: "their-comment"}, theirs.comment) : null,
      theirs.refs.length ? el("div", {className: "their-refs"}, theirs.refs.join(" · ")) : null,
      page.state.read_only ? null : el("button", {type: "button", className: "small", onclick: () => change(page, index, structuredClone(theirs))}, `Use ${annotation.slot}`));
  }));
}

/* The suggestion for a segment, beside the choices, never selected. */
function hint(page, index) {
  const suggested = page.state.suggestion?.segments?.[index];
  if (!suggested || suggested.label === null || suggested.label === undefined || page.consolidation) return null;
  const {labelText, typeLabel} = page;
  const what = suggested.label ? labelText.get(true) : `${labelText.get(false)}${suggested.error_type ? ` (${typeLabel[suggested.error_type] || suggested.error_type})` : ""}`;
  return el("div", {className: "felm-hint"},
    common.suggested(what, (v) => v, `suggested by ${page.source}: not selected for you`),
    suggested.comment?.trim() ? el("span", {className: "felm-hint-reason"}, ` reason: ${suggested.comment}`) : null);
}

/* Run ``fn`` now, or after the click of a pressed pointer has landed. */
function afterPointer(page, fn) {
  if (!page.pointerDown) { fn(); return; }
  document.addEventListener("pointerup", () => setTimeout(fn, 0), {once: true, capture: true});
}

function refItem(page, index, ref, r) {
  return el("li", {},
    el("a", {href: ref, target: "_blank", rel: "noopener noreferrer"}, ref),
    page.state.read_only ? null : el("button", {type: "button", className: "small", title: "remove", "aria-label": "remove this link",
      onclick: () => change(page, index, {refs: page.segments[index].refs.filter((_, k) => k !== r)})}, "×"));
}

/* The link typed in a segment's box and not added yet: true once added to the segment,
 * an error message when it is not a link, null when the box is empty. */
function takeDraftRef(page, index, {report = true} = {}) {
  const value = (page.draftRefs[index] || "").trim();
  if (!value) return null;
  const problem = badLink(value);
  if (problem) {
    const input = page.list.children[index]?.querySelector(".ref-input");
    if (input) { input.setCustomValidity("Enter an http(s) link"); if (report) input.reportValidity(); }
    return problem;
  }
  page.segments[index].refs = [...page.segments[index].refs, value];
  page.draftRefs[index] = "";
  return true;
}

/* A segment's reference box: Enter or "Add" adds the link, leaving the box adds it too. */
function refInputFor(page, index) {
  const segment = page.segments[index];
  const refInput = el("input", {type: "url", className: "ref-input", placeholder: "https://… (Enter to add)",
    "aria-label": "Reference link", disabled: page.state.read_only, value: page.draftRefs[index]});
  refInput.addEventListener("input", () => {
    page.draftRefs[index] = refInput.value;
    refInput.setCustomValidity("");
    renderCompleteness(page);
  });
  const addRef = () => {
    if (takeDraftRef(page, index) === true) {
      changed(page, index);
      page.list.children[index].querySelector(".ref-input").focus();
    }
  };
  refInput.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); addRef(); } });
  // Leaving the field (Esc, Tab, a click elsewhere) adds the typed link: a link is never dropped.
  // No re-render here: it would swallow the click that moved the focus.
  refInput.addEventListener("blur", () => {
    if (!refInput.isConnected) return;  // replaced by a re-render: the draft lives on in page.draftRefs
    const before = segment.refs.length;
    if (takeDraftRef(page, index, {report: false}) !== true) return;
    refInput.value = "";
    changed(page, index, {rerender: false});
    // Shown once the pointer is up: a line added under a pressed button would move it away.
    afterPointer(page, () => refInput.closest(".refs")?.querySelector(".ref-list")
      ?.append(refItem(page, index, segment.refs[before], before)));
  });
  return {refInput, addRef};
}

/* Put a segment's new node in its place in the list (or at its end, the first time). */
function placeSegment(page, index, node) {
  const old = page.list.children[index];
  if (old) {
    node.classList.toggle("current", index === page.current);
    old.replaceWith(node);
  } else page.list.append(node);
}

function renderSegment(page, index) {
  if (isEmpty(page, index)) {
    placeSegment(page, index, el("li", {className: "segment empty-segment complete", "data-index": index, onclick: () => select(page, index)},
      el("p", {className: "segment-text meta"}, "(empty segment: nothing to decide)")));
    return;
  }
  const segment = page.segments[index];
  const {labelText, labelKey, errorTypes} = page;
  const field = (name) => (page.disagreed.has(`segments[${index}].${name}`) ? "disagree" : "");
  const readOnly = page.state.read_only;
  // Unfolded when asked for, or when hiding it would hide something: text, a required
  // reason (error label), a disagreement to settle.
  const noteOpen = page.unfolded[index].note || segment.label === false || segment.comment !== "" || Boolean(field("comment"));
  const refsOpen = page.unfolded[index].refs || segment.refs.length > 0 || Boolean(field("refs"));
  const {refInput, addRef} = refInputFor(page, index);
  const folded = (part, text, key) => el("button", {type: "button", className: "small unfold", "data-part": part,
    title: `key ${key}`, onclick: (event) => { event.stopPropagation(); unfold(page, index, part); }}, text, " ", el("kbd", {}, key));
  placeSegment(page, index, el("li", {className: "segment", "data-index": index, onclick: () => select(page, index),
    onfocusin: () => { if (index !== page.current) select(page, index); }},
    el("p", {className: "segment-text"}, page.state.content.segments[index]),
    comparison(page, index),
    el("div", {className: "segment-controls"},
      el("div", {className: `choice ${field("label")}`},
        el("button", {type: "button", className: "label-correct", "aria-pressed": segment.label === true ? "true" : "false", disabled: readOnly,
          onclick: () => change(page, index, {label: true})}, `${labelText.get(true)} `, el("kbd", {}, labelKey.get(true))),
        el("button", {type: "button", className: "label-error", "aria-pressed": segment.label === false ? "true" : "false", disabled: readOnly,
          onclick: () => change(page, index, {label: false})}, `${labelText.get(false)} `, el("kbd", {}, labelKey.get(false)))),
      segment.label === false ? el("label", {className: `error-type-field ${field("error_type")}`}, "Error type ",
        el("select", {className: "error-type", disabled: readOnly, onchange: (e) => change(page, index, {error_type: e.target.value || null})},
          el("option", {value: ""}, `— choose (${errorTypes[0][2]}–${errorTypes.at(-1)[2]}) —`),
          errorTypes.map(([value, text, key]) => el("option", {value, selected: segment.error_type === value}, `${key}. ${text}`)))) : null,
      noteOpen || readOnly ? null : folded("note", "Add a note", "r"),
      refsOpen || readOnly ? null : folded("refs", "Add a link", "l"),
      hint(page, index)),
    // The reason stays visible whatever the label, so no text is ever saved unseen.
    noteOpen ? el("label", {className: `note ${field("comment")}`}, segment.label === false ? "Reason " : "Note (optional) ",
      el("textarea", {className: "comment", rows: 1, disabled: readOnly, value: segment.comment,
        oninput: (e) => { segment.comment = e.target.value; changed(page, index, {rerender: false}); }})) : null,
    refsOpen ? el("div", {className: `refs ${field("refs")}`}, el("span", {className: "refs-title"}, "References"),
      el("ul", {className: "ref-list"}, segment.refs.map((ref, r) => refItem(page, index, ref, r))),
      readOnly ? null : el("div", {className: "ref-add"}, refInput,
        el("button", {type: "button", className: "small", onclick: addRef}, "Add"))) : null));
}

function renderSegments(page) {
  page.segments.forEach((_, i) => renderSegment(page, i));
}

async function submit(page) {
  // A link still in its box is added first (Ctrl+Enter from the box, no blur before it).
  let added = false;
  page.segments.forEach((_, i) => { if (takeDraftRef(page, i, {report: false}) === true) { added = true; renderSegment(page, i); } });
  if (added) changed(page, null);
  page.listingIncomplete = true;
  const notDone = listIncomplete(page);
  if (notDone.length) {
    select(page, notDone[0][0]);
    return;
  }
  await submitAndContinue(page.saver, page.parts.submitButton, page.state.next_url);
}

function onKey(page, event) {
  if (page.state.read_only || event.ctrlKey || event.metaKey || event.altKey) return;
  const here = page.current;
  const actions = {
    j: () => select(page, here + 1), ArrowDown: () => select(page, here + 1),
    k: () => select(page, here - 1), ArrowUp: () => select(page, here - 1),
    r: () => unfold(page, here, "note"),
    l: () => unfold(page, here, "refs"),
  };
  for (const [label, key] of page.labelKey) actions[key] = () => isEmpty(page, here) || change(page, here, {label});
  if (page.consolidation) {
    // Shift+A, Shift+B: take that annotator's whole answer for the segment
    page.state.annotations.forEach((annotation) => {
      actions[annotation.slot] = () => change(page, here, structuredClone(annotation.payload.segments[here]));
    });
  }
  const typed = page.errorTypes.find(([, , key]) => key === event.key);
  if (typed && page.segments[here].label === false) {
    event.preventDefault();
    change(page, here, {error_type: typed[0]});
    return;
  }
  if (actions[event.key]) { event.preventDefault(); actions[event.key](); }
}

/* The page's state, in one object: the answers, what is unfolded or typed, what the page shows. */
function pageModel(state, consolidation) {
  // The label lists and what a segment needs come from the kind (annotation/kinds/felm/page.py),
  // their keys too (state.keys).
  const {choiceKeys} = pageKeys(state.keys);
  const labels = withKeys(state.rules.choices.label, choiceKeys("segments[].label"));
  const errorTypes = withKeys(state.rules.choices.error_type, choiceKeys("segments[].error_type"));
  const {completeness} = state.rules;
  const segments = state.payload.segments.map((s) => ({label: null, error_type: null, comment: "", refs: [], ...s}));
  return {
    state, consolidation, segments, errorTypes, segmentRules: entryRules(completeness, "segments"),
    typeLabel: Object.fromEntries(errorTypes), labelText: new Map(labels),
    labelKey: new Map(labels.map(([value, , key]) => [value, key])),
    disagreed: new Set(state.disagreed || []),
    list: document.getElementById("segments"), parts: common.pageParts(),
    current: 0,
    // Note and references folded to a small button until wanted (r / l, a click) or filled.
    unfolded: segments.map(() => ({note: false, refs: false})),
    draftRefs: segments.map(() => ""),  // typed in a reference box, not added yet
    listingIncomplete: false,  // after a refused submit, the list shrinks as segments get done
    responseSpans: markSegments(document.querySelector(".source .response"), state.response, state.content.segments),
    // Where the suggestions came from (the provenance the import or the pipeline recorded).
    source: (state.provenance || {}).suggestion === "import:labels" ? "the imported labels" : "the machine",
    pointerDown: false, saver: null,
  };
}

function start(state, options = {}) {
  const page = pageModel(state, Boolean(options.consolidation));
  page.saver = pageSaver({state, consolidation: page.consolidation, payload: () => ({segments: page.segments}),
    onErrors: (errors) => renderErrors(page, errors)});
  document.addEventListener("pointerdown", () => { page.pointerDown = true; }, true);
  document.addEventListener("pointerup", () => { page.pointerDown = false; }, true);
  renderSegments(page);
  page.responseSpans.forEach((span, i) => span?.addEventListener("click", () => select(page, i)));
  // A consolidator starts at the first disagreement, an annotator at the top.
  select(page, common.firstDisagreement(page.disagreed, "segments"));
  renderCompleteness(page);
  showLegendKeys(state.keys);
  endPage({state, parts: page.parts, submit: () => submit(page), onKey: (event) => onKey(page, event)});
}

const {state, consolidation} = common.pageState();
start(state, {consolidation});
