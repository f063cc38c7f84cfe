/* Autosave of the annotation pages: one saver per page, versioned writes, conflicts (409) and
 * lost answers handled, and the clock of active seconds sent with an annotator's saves. */
import {api} from "./common.js";

/* Counts seconds of real work: the tab is visible and the user did something in the last minute. */
export function activityClock() {
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
export function saver({url, method = "PUT", version, payload, extra, onSaved = () => {}, onStatus = showSaveStatus, onErrors}) {
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
export function showSaveStatus(text, state) {
  const status = document.getElementById("save-status");
  status.textContent = text;
  status.dataset.state = state;
}

/* Equal JSON values, whatever the order of object keys. */
export function sameJson(a, b) {
  const canonical = (value) => JSON.stringify(value, (key, v) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort()) : v);
  return canonical(a) === canonical(b);
}

/* The page's one save hook: its state's address and version, an annotator's active seconds
 * with every save (``extra``: what a consolidation page sends besides its payload). */
export function pageSaver({state, consolidation, payload, extra = null, onErrors}) {
  const clock = consolidation ? null : activityClock();
  return saver({url: state.api_url, version: state.version, payload, onErrors,
    extra: consolidation ? extra : () => ({active_seconds: clock.take()})});
}
