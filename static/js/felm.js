/* FELM segment labelling: the annotator's page and, with {consolidation: true}, the consolidator's. */
import * as common from "./common.js";
import {el} from "./common.js";
import {pageSaver} from "./save.js";
import {endPage, submitAndContinue} from "./ending.js";

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/* Where a segment is in the response, at ``from`` or later: whitespace and case aside, and
 * with up to three words dropped at either end (released segments are sometimes trimmed,
 * e.g. "It's worth noting that the merger…" became "The merger…"). */
function findSegment(text, segment, from) {
  const words = segment.split(/\s+/).filter(Boolean).map(escapeRegExp);
  const tries = [[0, words.length]];
  for (let k = 1; k <= 3 && words.length - k >= 4; k += 1) tries.push([k, words.length], [0, words.length - k]);
  for (const [first, end] of tries) {
    const pattern = new RegExp(words.slice(first, end).join("\\s+"), "giu");
    pattern.lastIndex = from;
    const match = pattern.exec(text);
    if (match) return match;
  }
  return null;
}

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

function start(state, options = {}) {
  const consolidation = Boolean(options.consolidation);
  // The label lists and what an error needs come from the kind (annotation/kinds/page_rules.py).
  const {choices: {label: LABELS, error_type: ERROR_TYPES}, required_for_error: REQUIRED_FOR_ERROR} = state.rules;
  const TYPE_LABEL = Object.fromEntries(ERROR_TYPES);
  const LABEL_TEXT = new Map(LABELS);
  const segments = state.payload.segments.map((s) => ({label: null, error_type: null, comment: "", refs: [], ...s}));
  const disagreed = new Set(state.disagreed || []);
  const list = document.getElementById("segments");
  const parts = common.pageParts();
  const {errorsEl, completenessEl, submitButton} = parts;
  let currentIndex = 0;
  // Note and references folded to a small button until wanted (r / l, a click) or filled.
  const unfolded = segments.map(() => ({note: false, refs: false}));
  const draftRefs = segments.map(() => "");  // typed in a reference box, not added yet
  let listingIncomplete = false;  // after a refused submit, the list shrinks as segments get done
  const responseSpans = markSegments(document.querySelector(".source .response"), state.response, state.content.segments);
  // Where the suggestions came from (the provenance the import or the pipeline recorded).
  const SOURCE = (state.provenance || {}).suggestion === "import:labels" ? "the imported labels" : "the machine";

  const saver = pageSaver({state, consolidation, payload: () => ({segments}), onErrors: showErrors});

  /* "segments[2].error_type" -> "Segment 3, error type" */
  function readableField(field) {
    const match = /^segments\[(\d+)\](?:\.(\w+))?/.exec(field);
    if (!match) return field;
    return `Segment ${Number(match[1]) + 1}${match[2] ? `, ${match[2].replace("_", " ")}` : ""}`;
  }

  function showErrors(errors) {
    errorsEl.replaceChildren(...errors.map((e) => {
      const match = /^segments\[(\d+)\]/.exec(e.field || "");
      if (!match) return el("li", {}, e.field ? `${readableField(e.field)}: ${e.message}` : e.message);
      return el("li", {}, el("button", {type: "button", className: "link", onclick: () => goTo(Number(match[1]))},
        readableField(e.field)), `: ${e.message}`);
    }));
    list.querySelectorAll(".invalid").forEach((n) => n.classList.remove("invalid"));
    for (const e of errors) {
      const match = /^segments\[(\d+)\]/.exec(e.field || "");
      if (match) list.children[Number(match[1])]?.classList.add("invalid");
    }
    fitFoot();
  }

  /* Keyboard scrolling keeps the current segment clear of the save bar and the errors above it. */
  function fitFoot() {
    const foot = errorsEl.closest(".panel-foot");
    if (foot) list.style.setProperty("--foot-height", `${foot.offsetHeight + 8}px`);
  }

  /* What a segment still lacks before a submit, e.g. ["error type", "reason"]. */
  /* A segment without text (released files have some): nothing to decide, never required. */
  const isEmpty = (index) => !String(state.content.segments[index] ?? "").trim();

  function missing(segment, index) {
    if (isEmpty(index)) return [];
    const problem = badDraftRef(index);
    if (problem) return [problem];
    if (segment.label === null) return ["label"];
    if (segment.label !== false) return [];
    return Object.entries(REQUIRED_FOR_ERROR).filter(([name]) => !String(segment[name] ?? "").trim()).map(([, what]) => what);
  }

  function listIncomplete() {
    const lacking = segments.map((s, i) => [i, missing(s, i)]).filter(([, what]) => what.length);
    if (!lacking.length) listingIncomplete = false;
    showErrors(lacking.map(([i, what]) => ({field: `segments[${i}]`,
      message: `${what.join(" and ")} ${what.length > 1 ? "are" : "is"} missing`})));
    // Above the list, not in the save status, which the next autosave overwrites.
    if (lacking.length) {
      errorsEl.prepend(el("li", {className: "summary"},
        `${consolidation ? "Gold record not saved" : "Not submitted"}: ${lacking.length} segment${lacking.length === 1 ? " is" : "s are"} not done.`));
      fitFoot();
    }
    return lacking;
  }

  function updateCompleteness() {
    const done = segments.filter((s, i) => !missing(s, i).length).length;
    completenessEl.textContent = `${done}/${segments.length} segments complete`;
    Array.from(list.children).forEach((node, i) => node.classList.toggle("complete", !missing(segments[i], i).length));
    responseSpans.forEach((span, i) => span?.classList.toggle("has-error", segments[i].label === false));
    if (listingIncomplete) listIncomplete();
  }

  function change(index, patch) {
    Object.assign(segments[index], patch);
    if (segments[index].label === true) segments[index].error_type = null;
    renderSegment(index);
    // The segment may have grown (error details): keep the one being worked on in view.
    if (index === currentIndex) list.children[index].scrollIntoView({block: "nearest"});
    updateCompleteness();
    saver.schedule();
  }

  function select(index) {
    currentIndex = Math.max(0, Math.min(segments.length - 1, index));
    Array.from(list.children).forEach((node, i) => node.classList.toggle("current", i === currentIndex));
    list.children[currentIndex]?.scrollIntoView({block: "nearest"});
    responseSpans.forEach((span, i) => span?.classList.toggle("current", i === currentIndex));
    revealInSource(responseSpans[currentIndex]);
  }

  /* From the list of incomplete segments: that segment, focus on what it lacks. */
  function goTo(index) {
    select(index);
    const node = list.children[index];
    const what = missing(segments[index], index)[0];
    const target = {label: ".label-correct", "error type": ".error-type", reason: ".comment"}[what];
    (target && node.querySelector(target) || node.querySelector("button"))?.focus();
  }

  /* r / l, or a click on the folded control: unfold the note or the references and type there. */
  function unfold(index, part) {
    unfolded[index][part] = true;
    renderSegment(index);
    list.children[index].querySelector(part === "note" ? ".comment" : ".ref-input")?.focus();
  }

  function comparison(index) {
    if (!consolidation) return null;
    return el("div", {className: "comparison"}, state.annotations.map((annotation) => {
      const theirs = annotation.payload.segments[index];
      const label = theirs.label === null ? "–" : theirs.label ? "correct" : "error";
      return el("div", {className: "their", "data-slot": annotation.slot},
        el("b", {}, `${annotation.slot} (${annotation.annotator}): `),
        el("span", {className: "their-label"}, label),
        theirs.error_type ? el("span", {className: "their-type"}, ` · ${TYPE_LABEL[theirs.error_type] || theirs.error_type}`) : null,
        theirs.comment ? el("div", {className: "their-comment"}, theirs.comment) : null,
        theirs.refs.length ? el("div", {className: "their-refs"}, theirs.refs.join(" · ")) : null,
        state.read_only ? null : el("button", {type: "button", className: "small", onclick: () => change(index, structuredClone(theirs))}, `Use ${annotation.slot}`));
    }));
  }

  /* The suggestion for a segment, beside the choices, never selected. */
  function hint(index) {
    const suggested = state.suggestion?.segments?.[index];
    if (!suggested || suggested.label === null || suggested.label === undefined || consolidation) return null;
    const what = suggested.label ? LABEL_TEXT.get(true) : `${LABEL_TEXT.get(false)}${suggested.error_type ? ` (${TYPE_LABEL[suggested.error_type] || suggested.error_type})` : ""}`;
    return el("div", {className: "felm-hint"},
      common.suggested(what, (v) => v, `suggested by ${SOURCE}: not selected for you`),
      suggested.comment?.trim() ? el("span", {className: "felm-hint-reason"}, ` reason: ${suggested.comment}`) : null);
  }

  let pointerDown = false;
  document.addEventListener("pointerdown", () => { pointerDown = true; }, true);
  document.addEventListener("pointerup", () => { pointerDown = false; }, true);
  /* Run ``fn`` now, or after the click of a pressed pointer has landed. */
  function afterPointer(fn) {
    if (!pointerDown) { fn(); return; }
    document.addEventListener("pointerup", () => setTimeout(fn, 0), {once: true, capture: true});
  }

  function refItem(index, ref, r) {
    return el("li", {},
      el("a", {href: ref, target: "_blank", rel: "noopener noreferrer"}, ref),
      state.read_only ? null : el("button", {type: "button", className: "small", title: "remove", "aria-label": "remove this link",
        onclick: () => change(index, {refs: segments[index].refs.filter((_, k) => k !== r)})}, "×"));
  }

  /* A link typed in a segment's box that is not an http(s) link: what to say, else null. */
  function badDraftRef(index) {
    const value = (draftRefs[index] || "").trim();
    if (!value) return null;
    try { if (/^https?:$/.test(new URL(value).protocol)) return null; } catch (e) { /* not a URL */ }
    return `a valid link (“${value}” is not an http(s) link: fix it or clear the box)`;
  }

  /* The link typed in a segment's box and not added yet: true once added to the segment,
   * an error message when it is not a link, null when the box is empty. */
  function takeDraftRef(index, {report = true} = {}) {
    const value = (draftRefs[index] || "").trim();
    if (!value) return null;
    if (badDraftRef(index)) {
      const input = list.children[index]?.querySelector(".ref-input");
      if (input) { input.setCustomValidity("Enter an http(s) link"); if (report) input.reportValidity(); }
      return badDraftRef(index);
    }
    segments[index].refs = [...segments[index].refs, value];
    draftRefs[index] = "";
    return true;
  }

  function renderSegment(index) {
    const segment = segments[index];
    const field = (name) => (disagreed.has(`segments[${index}].${name}`) ? "disagree" : "");
    const readOnly = state.read_only;
    // Unfolded when asked for, or when hiding it would hide something: text, a required
    // reason (error label), a disagreement to settle.
    const noteOpen = unfolded[index].note || segment.label === false || segment.comment !== "" || Boolean(field("comment"));
    const refsOpen = unfolded[index].refs || segment.refs.length > 0 || Boolean(field("refs"));
    const refInput = el("input", {type: "url", className: "ref-input", placeholder: "https://… (Enter to add)",
      "aria-label": "Reference link", disabled: readOnly, value: draftRefs[index]});
    refInput.addEventListener("input", () => {
      draftRefs[index] = refInput.value;
      refInput.setCustomValidity("");
      updateCompleteness();
    });
    const addRef = () => {
      if (takeDraftRef(index) === true) {
        change(index, {});
        list.children[index].querySelector(".ref-input").focus();
      }
    };
    refInput.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); addRef(); } });
    // Leaving the field (Esc, Tab, a click elsewhere) adds the typed link: a link is never dropped.
    // No re-render here: it would swallow the click that moved the focus.
    refInput.addEventListener("blur", () => {
      if (!refInput.isConnected) return;  // replaced by a re-render: the draft lives on in draftRefs
      const before = segment.refs.length;
      if (takeDraftRef(index, {report: false}) !== true) return;
      refInput.value = "";
      updateCompleteness();
      saver.schedule();
      // Shown once the pointer is up: a line added under a pressed button would move it away.
      afterPointer(() => refInput.closest(".refs")?.querySelector(".ref-list")
        ?.append(refItem(index, segment.refs[before], before)));
    });
    const folded = (part, text, key) => el("button", {type: "button", className: "small unfold", "data-part": part,
      title: `key ${key}`, onclick: (event) => { event.stopPropagation(); unfold(index, part); }}, text, " ", el("kbd", {}, key));

    if (isEmpty(index)) {
      const empty = el("li", {className: "segment empty-segment complete", "data-index": index, onclick: () => select(index)},
        el("p", {className: "segment-text meta"}, "(empty segment: nothing to decide)"));
      const previous = list.children[index];
      if (previous) {
        empty.classList.toggle("current", index === currentIndex);
        previous.replaceWith(empty);
      } else list.append(empty);
      return;
    }
    const node = el("li", {className: "segment", "data-index": index, onclick: () => select(index),
      onfocusin: () => { if (index !== currentIndex) select(index); }},
      el("p", {className: "segment-text"}, state.content.segments[index]),
      comparison(index),
      el("div", {className: "segment-controls"},
        el("div", {className: `choice ${field("label")}`},
          el("button", {type: "button", className: "label-correct", "aria-pressed": segment.label === true ? "true" : "false", disabled: readOnly,
            onclick: () => change(index, {label: true})}, `${LABEL_TEXT.get(true)} `, el("kbd", {}, "c")),
          el("button", {type: "button", className: "label-error", "aria-pressed": segment.label === false ? "true" : "false", disabled: readOnly,
            onclick: () => change(index, {label: false})}, `${LABEL_TEXT.get(false)} `, el("kbd", {}, "x"))),
        segment.label === false ? el("label", {className: `error-type-field ${field("error_type")}`}, "Error type ",
          el("select", {className: "error-type", disabled: readOnly, onchange: (e) => change(index, {error_type: e.target.value || null})},
            el("option", {value: ""}, `— choose (1–${ERROR_TYPES.length}) —`),
            ERROR_TYPES.map(([value, text], i) => el("option", {value, selected: segment.error_type === value}, `${i + 1}. ${text}`)))) : null,
        noteOpen || readOnly ? null : folded("note", "Add a note", "r"),
        refsOpen || readOnly ? null : folded("refs", "Add a link", "l"),
        hint(index)),
      // The reason stays visible whatever the label, so no text is ever saved unseen.
      noteOpen ? el("label", {className: `note ${field("comment")}`}, segment.label === false ? "Reason " : "Note (optional) ",
        el("textarea", {className: "comment", rows: 1, disabled: readOnly, value: segment.comment,
          oninput: (e) => { segment.comment = e.target.value; updateCompleteness(); saver.schedule(); }})) : null,
      refsOpen ? el("div", {className: `refs ${field("refs")}`}, el("span", {className: "refs-title"}, "References"),
        el("ul", {className: "ref-list"}, segment.refs.map((ref, r) => refItem(index, ref, r))),
        readOnly ? null : el("div", {className: "ref-add"}, refInput,
          el("button", {type: "button", className: "small", onclick: addRef}, "Add"))) : null);
    const old = list.children[index];
    if (old) {
      node.classList.toggle("current", index === currentIndex);
      old.replaceWith(node);
    } else list.append(node);
  }

  async function submit() {
    // A link still in its box is added first (Ctrl+Enter from the box, no blur before it).
    let added = false;
    segments.forEach((_, i) => { if (takeDraftRef(i, {report: false}) === true) { added = true; renderSegment(i); } });
    if (added) { updateCompleteness(); saver.schedule(); }
    listingIncomplete = true;
    const lacking = listIncomplete();
    if (lacking.length) {
      select(lacking[0][0]);
      return;
    }
    await submitAndContinue(saver, submitButton, state.next_url);
  }

  function onKey(event) {
    if (state.read_only || event.ctrlKey || event.metaKey || event.altKey) return;
    const actions = {
      c: () => isEmpty(currentIndex) || change(currentIndex, {label: true}),
      x: () => isEmpty(currentIndex) || change(currentIndex, {label: false}),
      j: () => select(currentIndex + 1), ArrowDown: () => select(currentIndex + 1),
      k: () => select(currentIndex - 1), ArrowUp: () => select(currentIndex - 1),
      r: () => unfold(currentIndex, "note"),
      l: () => unfold(currentIndex, "refs"),
    };
    if (consolidation) {
      // Shift+A, Shift+B: take that annotator's whole answer for the segment
      state.annotations.forEach((annotation) => {
        actions[annotation.slot] = () => change(currentIndex, structuredClone(annotation.payload.segments[currentIndex]));
      });
    }
    const typeIndex = Number(event.key) - 1;
    if (/^[1-9]$/.test(event.key) && ERROR_TYPES[typeIndex] && segments[currentIndex].label === false) {
      event.preventDefault();
      change(currentIndex, {error_type: ERROR_TYPES[typeIndex][0]});
      return;
    }
    if (actions[event.key]) { event.preventDefault(); actions[event.key](); }
  }

  segments.forEach((_, i) => renderSegment(i));
  responseSpans.forEach((span, i) => span?.addEventListener("click", () => select(i)));
  // A consolidator starts at the first disagreement, an annotator at the top.
  select(common.firstDisagreement(disagreed, "segments"));
  updateCompleteness();
  endPage({state, parts, submit, onKey});
}

const {state, consolidation} = common.pageState();
start(state, {consolidation});

