/* FELM segment labelling: the annotator's page and, with {consolidation: true}, the consolidator's. */
"use strict";

const FelmAnnotate = (() => {
  const {el} = Workbench;
  const ERROR_TYPES = [
    ["knowledge_error", "Knowledge error"],
    ["reasoning_error", "Reasoning error"],
    ["irrelevant", "Irrelevant"],
    ["fooled", "Fooled"],
  ];
  const TYPE_LABEL = Object.fromEntries(ERROR_TYPES);

  function start(state, options = {}) {
    const consolidation = Boolean(options.consolidation);
    const segments = state.payload.segments.map((s) => ({label: null, error_type: null, comment: "", refs: [], ...s}));
    const disagreed = new Set(state.disagreed || []);
    const list = document.getElementById("segments");
    const statusEl = document.getElementById("save-status");
    const errorsEl = document.getElementById("errors");
    const completenessEl = document.getElementById("completeness");
    const submitButton = document.getElementById("submit");
    const clock = Workbench.activityClock();
    let currentIndex = 0;
    // Where the suggestions came from (the provenance the import or the pipeline recorded).
    const SOURCE = (state.provenance || {}).suggestion === "import:labels" ? "the imported labels" : "the machine";

    const saver = Workbench.saver({
      url: state.api_url,
      version: state.version,
      payload: () => ({segments}),
      extra: consolidation ? null : () => ({active_seconds: clock.take()}),
      onErrors: showErrors,
    });

    /* "segments[2].error_type" -> "Segment 3, error type" */
    function readableField(field) {
      const match = /^segments\[(\d+)\](?:\.(\w+))?/.exec(field);
      if (!match) return field;
      return `Segment ${Number(match[1]) + 1}${match[2] ? `, ${match[2].replace("_", " ")}` : ""}`;
    }

    function showErrors(errors) {
      errorsEl.replaceChildren(...errors.map((e) => el("li", {}, e.field ? `${readableField(e.field)}: ${e.message}` : e.message)));
      list.querySelectorAll(".invalid").forEach((n) => n.classList.remove("invalid"));
      for (const e of errors) {
        const match = /^segments\[(\d+)\]/.exec(e.field || "");
        if (match) list.children[Number(match[1])]?.classList.add("invalid");
      }
    }

    function missing(segment) {
      if (segment.label === null) return "label";
      if (segment.label === false && !segment.error_type) return "error type";
      if (segment.label === false && !segment.comment.trim()) return "reason";
      return null;
    }

    function updateCompleteness() {
      const done = segments.filter((s) => !missing(s)).length;
      completenessEl.textContent = `${done}/${segments.length} segments complete`;
      Array.from(list.children).forEach((node, i) => node.classList.toggle("complete", !missing(segments[i])));
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
      const what = suggested.label ? "Correct" : `Contains an error${suggested.error_type ? ` (${TYPE_LABEL[suggested.error_type] || suggested.error_type})` : ""}`;
      return el("div", {className: "felm-hint"},
        Workbench.suggested(what, (v) => v, `suggested by ${SOURCE}: not selected for you`),
        suggested.comment ? el("span", {className: "felm-hint-reason"}, ` reason: ${suggested.comment}`) : null);
    }

    function renderSegment(index) {
      const segment = segments[index];
      const field = (name) => (disagreed.has(`segments[${index}].${name}`) ? "disagree" : "");
      const readOnly = state.read_only;
      const refInput = el("input", {type: "url", className: "ref-input", placeholder: "https://… (Enter to add)", disabled: readOnly});
      const addRef = () => {
        const value = refInput.value.trim();
        if (!value) return;
        try { const url = new URL(value); if (!/^https?:$/.test(url.protocol)) throw new Error(); }
        catch (e) { refInput.setCustomValidity("Enter an http(s) link"); refInput.reportValidity(); return; }
        refInput.setCustomValidity("");
        change(index, {refs: [...segment.refs, value]});
        list.children[index].querySelector(".ref-input").focus();
      };
      refInput.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); addRef(); } });

      const node = el("li", {className: "segment", "data-index": index, onclick: () => select(index)},
        el("p", {className: "segment-text"}, state.content.segments[index]),
        hint(index),
        comparison(index),
        el("div", {className: `choice ${field("label")}`},
          el("button", {type: "button", className: "label-correct", "aria-pressed": segment.label === true ? "true" : "false", disabled: readOnly,
            onclick: () => change(index, {label: true})}, "Correct (c)"),
          el("button", {type: "button", className: "label-error", "aria-pressed": segment.label === false ? "true" : "false", disabled: readOnly,
            onclick: () => change(index, {label: false})}, "Contains an error (x)")),
        el("div", {className: "error-details"},
          segment.label === false ? el("label", {className: field("error_type")}, "Error type ",
            el("select", {className: "error-type", disabled: readOnly, onchange: (e) => change(index, {error_type: e.target.value || null})},
              el("option", {value: ""}, "— choose (1–4) —"),
              ERROR_TYPES.map(([value, text], i) => el("option", {value, selected: segment.error_type === value}, `${i + 1}. ${text}`)))) : null,
          // The reason stays visible whatever the label, so no text is ever saved unseen.
          el("label", {className: field("comment")}, segment.label === false ? "Reason " : "Note (optional) ",
            el("textarea", {className: "comment", rows: segment.label === false ? 2 : 1, disabled: readOnly, value: segment.comment,
              oninput: (e) => { segment.comment = e.target.value; updateCompleteness(); saver.schedule(); }}))),
        el("div", {className: `refs ${field("refs")}`}, "References: ",
          el("ul", {className: "ref-list"}, segment.refs.map((ref, r) => el("li", {},
            el("a", {href: ref, target: "_blank", rel: "noopener noreferrer"}, ref),
            readOnly ? null : el("button", {type: "button", className: "small", title: "remove",
              onclick: () => change(index, {refs: segment.refs.filter((_, k) => k !== r)})}, "×")))),
          readOnly ? null : refInput, readOnly ? null : el("button", {type: "button", className: "small", onclick: addRef}, "Add")));
      const old = list.children[index];
      if (old) {
        node.classList.toggle("current", index === currentIndex);
        old.replaceWith(node);
      } else list.append(node);
    }

    async function submit() {
      const incomplete = segments.findIndex((s) => missing(s));
      if (incomplete >= 0) {
        select(incomplete);
        showErrors([{field: `segments[${incomplete}]`, message: `${missing(segments[incomplete])} is missing`}]);
        return;
      }
      await Workbench.submitAndContinue(saver, submitButton, state.next_url);
    }

    function onKey(event) {
      if (state.read_only || event.ctrlKey || event.metaKey || event.altKey) return;
      const node = list.children[currentIndex];
      const actions = {
        c: () => change(currentIndex, {label: true}),
        x: () => change(currentIndex, {label: false}),
        j: () => select(currentIndex + 1), ArrowDown: () => select(currentIndex + 1),
        k: () => select(currentIndex - 1), ArrowUp: () => select(currentIndex - 1),
        r: () => node.querySelector(".comment")?.focus(),
        l: () => node.querySelector(".ref-input")?.focus(),
      };
      if (consolidation) {
        // Shift+A, Shift+B: take that annotator's whole answer for the segment
        state.annotations.forEach((annotation) => {
          actions[annotation.slot] = () => change(currentIndex, structuredClone(annotation.payload.segments[currentIndex]));
        });
      }
      if (/^[1-4]$/.test(event.key) && segments[currentIndex].label === false) {
        event.preventDefault();
        change(currentIndex, {error_type: ERROR_TYPES[Number(event.key) - 1][0]});
        return;
      }
      if (actions[event.key]) { event.preventDefault(); actions[event.key](); }
    }

    segments.forEach((_, i) => renderSegment(i));
    // A consolidator starts at the first disagreement, an annotator at the top.
    select(Workbench.firstDisagreement(disagreed, "segments"));
    updateCompleteness();
    if (state.read_only) Workbench.showReadOnly(submitButton, statusEl, state);
    submitButton.addEventListener("click", submit);
    Workbench.listenForKeys(submit, onKey);
  }

  return {start};
})();
