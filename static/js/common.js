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
   * Autosave: one save in flight at a time, the latest payload wins, every save carries the
   * version it was based on. A 409 means another tab saved newer work: stop and ask to reload.
   */
  function saver({url, method, version, payload, extra, onSaved, onStatus, onErrors}) {
    let current = version;
    let timer = null;
    let inFlight = null;
    let dirty = false;
    let conflict = false;

    async function save(submit = false) {
      if (conflict) return {ok: false};
      clearTimeout(timer);
      if (inFlight) await inFlight;
      dirty = false;
      onStatus("Saving…", "saving");
      const body = {payload: payload(), version: current, submit, ...(extra ? extra() : {})};
      inFlight = api(url, method, body);
      const result = await inFlight;
      inFlight = null;
      if (result.status === 409) {
        conflict = true;
        onStatus(`Newer work was saved elsewhere (version ${result.data.stored_version}). Reload the page to continue.`, "conflict");
        return result;
      }
      if (!result.ok) {
        onStatus(submit ? "Not submitted: fix the fields below." : "Not saved: fix the fields below.", "error");
        onErrors(result.data.errors || [{field: "", message: result.data.detail || "error"}]);
        return result;
      }
      current = result.data.version;
      onErrors([]);
      onStatus(`Saved (version ${current})`, "saved");
      onSaved(result.data);
      return result;
    }

    function schedule() {
      dirty = true;
      onStatus("Unsaved changes…", "dirty");
      clearTimeout(timer);
      timer = setTimeout(() => save(false), 600);
    }

    window.addEventListener("beforeunload", (event) => {
      if (dirty || inFlight) { save(false); event.preventDefault(); }
    });
    return {save, schedule, get version() { return current; }};
  }

  /* Submit (the saver validates on the server) and go on to the next item. */
  async function submitAndContinue(saverInstance, button, nextUrl) {
    button.disabled = true;
    const result = await saverInstance.save(true);
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

  function showReadOnly(button, statusElement, submitted) {
    button.disabled = true;
    statusElement.textContent = submitted ? "Submitted — read-only" : "Read-only";
  }

  return {el, api, saver, activityClock, csrfToken, submitAndContinue, listenForKeys, firstDisagreement, showReadOnly};
})();
