/* Shared helpers of the annotation pages: DOM building, API calls, autosave with version check. */
"use strict";

const Workbench = (() => {
  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  /* Build an element; children are nodes or strings (always inserted as text, never HTML). */
  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "className") node.className = value;
      else if (key === "value") node.value = value;
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  async function api(url, method, body) {
    const response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken(), "Accept": "application/json"},
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    try { data = await response.json(); } catch (e) { data = {detail: response.statusText}; }
    return {status: response.status, ok: response.ok, data};
  }

  /* Counts seconds of real work: the tab is visible and the user did something in the last minute. */
  function activityClock() {
    let lastInput = Date.now();
    let seconds = 0;
    ["keydown", "mousedown", "input", "scroll"].forEach((type) => document.addEventListener(type, () => { lastInput = Date.now(); }, true));
    setInterval(() => {
      if (document.visibilityState === "visible" && Date.now() - lastInput < 60000) seconds += 1;
    }, 1000);
    return {take() { const s = seconds; seconds = 0; return s; }};
  }

  /*
   * Autosave. Saves run one after another, each carrying the version the previous one
   * returned, and the latest payload wins. Edits stay "unsaved" until the server accepts them:
   * a lost connection, a server error or an ended session is retried with backoff (and leaving
   * the page warns); a 409 means another tab saved newer work: the page stops and asks to
   * reload, and keeps saying so. A save whose answer was lost may still have been stored: its
   * retry then meets a 409, and the stored work is checked before calling it a conflict.
   */
  function saver({url, method = "PUT", version, payload, extra, onSaved = () => {}, onStatus = showSaveStatus, onErrors}) {
    let current = version;
    let timer = null;
    let queue = Promise.resolve();
    let running = 0;
    let unsaved = false;
    let conflict = null;
    let retryDelay = 0;
    let submitFailed = false;
    let lost = [];           // bodies of saves whose answer never came (they may have been stored)
    let finished = false;    // submitted: nothing more to save from this page
    let errorsShown = false; // clearing them re-renders the editor: only when some are shown

    function showConflict() {
      onStatus("Newer work on this item was saved in another tab or window. This tab's latest edits are not saved: " +
        "reload the page to continue from the saved work.", "conflict");
    }

    /* After lost answers: is the stored work one this tab sent? */
    async function landedEarlier() {
      if (!lost.length) return null;
      let stored;
      try { stored = await api(url, "GET"); } catch (networkError) { return null; }
      if (!stored.ok || !lost.some((sent) => sameJson(stored.data.payload, JSON.parse(sent)))) return null;
      return stored.data;
    }

    function retryLater(reason, submit) {
      retryDelay = Math.min(retryDelay ? retryDelay * 2 : 2000, 30000);
      // The retry saves a draft; submitting stays the user's decision.
      if (submit) submitFailed = true;
      onStatus(`Not ${submit ? "submitted" : "saved"}: ${reason}. Your edits are kept on this page; retrying in ${retryDelay / 1000} s…`, "error");
      clearTimeout(timer);
      timer = setTimeout(() => save(false), retryDelay);
    }

    async function attempt(submit) {
      if (finished) return {ok: true, status: 204, data: {}};
      if (conflict !== null) { showConflict(); return {ok: false, status: 409, data: {}}; }
      if (!submit && !unsaved) return {ok: true, status: 204, data: {}};
      unsaved = false;
      onStatus(submit ? "Submitting…" : "Saving…", "saving");
      const body = {payload: payload(), version: current, submit, ...(extra ? extra() : {})};
      const sent = JSON.stringify(body.payload);  // the page keeps editing the payload object
      let result;
      try {
        result = await api(url, method, body);
      } catch (networkError) {
        result = {ok: false, status: 0, data: {}};
      }
      if (result.status === 409) {
        const stored = await landedEarlier();
        if (stored) {
          // Our own earlier save: carry on from the version it got.
          lost = [];
          current = stored.version;
          if (stored.submitted) {
            finished = true;
            onStatus("Submitted", "saved");
            return {ok: true, status: 200, data: stored};
          }
          unsaved = true;
          return attempt(submit);
        }
        conflict = result.data.stored_version;
        showConflict();
        return result;
      }
      if (result.status === 0) lost.push(sent);
      else lost = [];
      if (!result.ok) {
        unsaved = true;
        if (result.status === 0) retryLater("no connection to the server", submit);
        else if (result.status === 401 || result.status === 403) {
          retryLater("you are logged out or no longer allowed (log in again in another tab)", submit);
        } else if (result.status >= 500 || result.status === 429) retryLater(`the server answered ${result.status}`, submit);
        else {
          onStatus(submit ? "Not submitted: fix the fields below." : "Not saved: fix the fields below.", "error");
          errorsShown = true;
          onErrors(result.data.errors || [{field: "", message: result.data.detail || `error ${result.status}`}]);
        }
        return result;
      }
      retryDelay = 0;
      current = result.data.version;
      // A page re-renders on onErrors: doing it after every save would swallow a click or
      // take the focus from a field the annotator is typing in.
      if (errorsShown) { errorsShown = false; onErrors([]); }
      if (submit) { submitFailed = false; finished = result.data.submitted !== false; }
      if (unsaved) onStatus("Unsaved changes…", "dirty");
      else if (submitFailed) onStatus("Saved as a draft, not submitted yet: submit again.", "dirty");
      else onStatus(submit && finished ? "Submitted" : "Saved", "saved");
      onSaved(result.data);
      return result;
    }

    /* Queue a save; resolves with the server's answer ({ok, status, data}). */
    function save(submit = false) {
      clearTimeout(timer);
      running += 1;
      const result = queue.then(() => attempt(submit)).finally(() => { running -= 1; });
      queue = result.catch(() => {});
      return result;
    }

    function schedule() {
      unsaved = true;
      if (conflict !== null) { showConflict(); return; }
      onStatus("Unsaved changes…", "dirty");
      clearTimeout(timer);
      timer = setTimeout(() => save(false), 600);
    }

    window.addEventListener("beforeunload", (event) => {
      if (finished) return;
      if (unsaved || running) {
        if (unsaved && !running && conflict === null) save(false);
        event.preventDefault();
      }
    });
    // Back online: save now rather than at the end of the backoff.
    window.addEventListener("online", () => { if (unsaved && conflict === null) save(false); });
    return {save, schedule, get version() { return current; }, get conflicted() { return conflict !== null; }};
  }

  /* The save bar's status line (_savebar.html); its data-state drives the colour. */
  function showSaveStatus(text, state) {
    const status = document.getElementById("save-status");
    status.textContent = text;
    status.dataset.state = state;
  }

  /* Equal JSON values, whatever the order of object keys. */
  function sameJson(a, b) {
    const canonical = (value) => JSON.stringify(value, (key, v) =>
      v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort()) : v);
    return canonical(a) === canonical(b);
  }

  /* Submit (the saver validates on the server) and go on to the next item. */
  let submitting = false;
  async function submitAndContinue(saverInstance, button, nextUrl) {
    if (submitting) return;  // a second Ctrl+Enter while the first submit runs
    submitting = true;
    button.disabled = true;
    const result = await saverInstance.save(true);
    submitting = false;
    button.disabled = false;
    if (result.ok) window.location.href = nextUrl;
  }

  /*
   * The keys every page shares: Ctrl+Enter submits, Esc leaves a text field, and keys typed
   * into a field stay there. Other keys go to ``handle``.
   */
  function listenForKeys(submit, handle) {
    document.addEventListener("keydown", (event) => {
      const target = event.target;
      const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable;
      // A page form of its own (the discard form) keeps its keys: Ctrl+Enter there must not save gold.
      if (target.closest && target.closest("form")) return;
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") { event.preventDefault(); submit(); return; }
      if (typing) {
        if (event.key === "Escape") target.blur();
        return;
      }
      handle(event);
    });
  }

  /* Index of the first unit (e.g. "segments") with a disagreement, or 0. */
  function firstDisagreement(disagreedPaths, unit) {
    const pattern = new RegExp(`^${unit}\\[(\\d+)\\]`);
    const indexes = [...disagreedPaths].map((path) => Number(pattern.exec(path)?.[1])).filter(Number.isFinite);
    return indexes.length ? Math.min(...indexes) : 0;
  }

  function showReadOnly(button, statusElement, state) {
    button.disabled = true;
    const why = state.submitted ? "Submitted" : {discarded: "Discarded", done: "Gold record saved"}[state.status];
    statusElement.textContent = why ? `${why} — read-only` : "Read-only";
  }

  /* The parts every annotation page has (_workbench.html, _savebar.html, the keys legend). */
  function pageParts() {
    const byId = (id) => document.getElementById(id);
    return {editorEl: byId("editor"), statusEl: byId("save-status"), errorsEl: byId("errors"),
      completenessEl: byId("completeness"), submitButton: byId("submit"), keysEl: byId("keys")};
  }

  /* Before a submit: the first unit that still lacks something (``lacking[i]``: what unit i
   * lacks), as one error that also says how many others do; null when all are done. */
  function incomplete(lacking, unitName, path) {
    const first = lacking.findIndex((lacks) => lacks.length);
    if (first < 0) return null;
    const others = lacking.filter((lacks, k) => k !== first && lacks.length).length;
    return {index: first, error: {field: `${path}[${first}]`, message: `still to do: ${lacking[first].join("; ")}`
      + (others ? ` (and ${others} more ${unitName}${others === 1 ? "" : "s"} not done)` : "")}};
  }

  /* What a consolidation page is handed about the annotators' answers (empty on an annotator's). */
  function theirAnswers(state) {
    return {disagreed: new Set(state.disagreed || []), annotations: state.annotations || [], alignment: state.alignment || []};
  }

  // -- widgets the annotation pages share ----------------------------------------------------

  const classes = (...names) => names.filter(Boolean).join(" ");
  const keyName = (key) => (/^[A-Z]$/.test(key) ? `⇧${key}` : key);

  /* A row of toggle buttons, one per [value, label, key] option; the chosen one is pressed. */
  function choices(options, value, onPick, {className = "", disagree = false, invalid = false, readOnly = false} = {}) {
    return el("div", {className: classes("fc-choices", className, disagree && "disagree", invalid && "invalid"), role: "group"},
      options.map(([optionValue, text, key]) => el("button", {
        type: "button", "data-value": String(optionValue), "aria-pressed": value === optionValue ? "true" : "false",
        disabled: readOnly, title: key ? `key ${keyName(key)}` : null, onclick: () => onPick(optionValue),
      }, text, key ? " " : null, key ? el("kbd", {}, keyName(key)) : null)));
  }

  /* A machine suggestion beside the choices: shown, never selected. */
  function suggested(value, show, title = "machine suggestion: not selected for you") {
    if (value === null || value === undefined || value === "") return null;
    return el("span", {className: "fc-suggested", title}, `suggested: ${show(value)}`);
  }

  /* One box per annotator: who, a "Use A" button, their value (consolidation pages). */
  function theirBox(annotation, content, button) {
    const who = `${annotation.slot} (${annotation.annotator}${annotation.role === "third_rater" ? ", third rater" : ""})`;
    return el("div", {className: "fc-their", "data-slot": annotation.slot},
      el("div", {className: "fc-their-head"}, el("span", {className: "fc-who"}, who), button),
      content);
  }

  function compareRow(boxes, agreed, columns) {
    return el("div", {className: classes("fc-compare", agreed && "agreed"), style: `--columns: ${columns}`}, boxes);
  }

  // One column on a narrow screen: the key legend starts folded so the editor is not pushed down.
  if (window.matchMedia("(max-width: 900px)").matches) {
    document.querySelectorAll("details.keys").forEach((legend) => { legend.open = false; });
  }

  return {el, api, saver, activityClock, csrfToken, submitAndContinue, listenForKeys, firstDisagreement, showReadOnly,
    pageParts, theirAnswers, incomplete, classes, keyName, choices, suggested, theirBox, compareRow};
})();
