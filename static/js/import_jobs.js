/* Project page: refuse files over the size limit before uploading, and follow running imports
 * (progress bar, then the outcome) and corpora (import, then background embedding) by polling
 * the API. Server text goes in as text only. */
"use strict";

(() => {
  const {el, api} = Workbench;
  const POLL_MS = 1000;
  // Embedding a large corpus takes the better part of an hour: its row is polled less often.
  const CORPUS_POLL_MS = 5000;

  const form = document.getElementById("import-form");
  if (form) {
    form.addEventListener("submit", (event) => {
      const input = form.querySelector("input[type=file]");
      const max = Number(form.dataset.maxBytes);
      const file = input && input.files[0];
      const message = document.getElementById("import-form-error");
      message.textContent = "";
      if (file && max && file.size > max) {
        event.preventDefault();
        message.textContent = `The file is too large (${(file.size / 2 ** 20).toFixed(1)} MiB): imports take at most ` +
          `${Math.round(max / 2 ** 20)} MiB. Split it into several files.`;
      }
    });
  }

  function summary(result) {
    const parts = result.gold_records ? [`${result.gold_records} gold records`] : [];
    if (result.precomputing) parts.push(`${result.precomputing} being pre-annotated; their assignments follow when that is done`);
    if (result.assignments || !result.precomputing) parts.push(`${result.assignments} assignments`);
    if (result.duplicates_skipped) parts.push(`${result.duplicates_skipped} exact duplicates skipped`);
    if (result.skipped_lines) parts.push(`${result.skipped_lines} bad ${result.skipped_lines === 1 ? "line" : "lines"} skipped`);
    return `Imported ${result.items} ${result.items === 1 ? "item" : "items"} (${parts.join(", ")}).`;
  }

  const errorText = (e) => `line ${e.line}, field ${e.field}: ${e.message}`;

  /* The counts, what the admin must do (warnings), and each line on_error=skip left out. */
  function done(result) {
    const skipped = result.skipped || [];
    return [
      summary(result),
      ...(result.warnings || []).map((w) => el("p", {className: "warning"}, w)),
      skipped.length ? el("details", {className: "skipped-lines", open: true}, el("summary", {}, "Skipped lines"),
        el("ul", {}, skipped.map((e) => el("li", {}, errorText(e))))) : null,
    ].filter((part) => part !== null);
  }

  function outcome(job) {
    if (job.state === "done" && job.result) return done(job.result);
    if (job.state === "failed") {
      return el("span", {className: "error"}, "Nothing was imported: ",
        job.errors.map(errorText).join("; "));
    }
    return null;
  }

  /* A job row's state badge (``label`` or the state capitalised) and progress bar
   * (``done`` of ``total``, hidden once ``ended``). */
  function showJobState(row, {state, label, done, total, ended}) {
    const badge = row.querySelector("[data-role=state]");
    badge.textContent = label || state.charAt(0).toUpperCase() + state.slice(1);
    badge.className = `badge ${state}`;
    row.dataset.state = state;
    const bar = row.querySelector("[data-role=progress]");
    bar.max = total || 1;
    bar.value = done;
    if (ended !== undefined) bar.hidden = ended;
  }

  function show(row, job) {
    showJobState(row, {state: job.state, done: job.bytes_read, total: job.file_size,
                       ended: job.state === "done" || job.state === "failed"});
    row.querySelector("[data-role=lines]").textContent = `${job.lines_read} lines read`;
    const result = outcome(job);
    if (result) row.querySelector("[data-role=outcome]").replaceChildren(...[result].flat());
  }

  function showCorpus(row, corpus) {
    const searchable = "noWorker" in row.dataset && corpus.state === "embedding";
    showJobState(row, {state: corpus.state, label: searchable ? "Searchable" : corpus.state_display, done: corpus.embedded,
                       total: corpus.passages});
    row.querySelector("[data-role=documents]").textContent = corpus.documents;
    row.querySelector("[data-role=passages]").textContent = corpus.passages;
    row.querySelector("[data-role=embedded]").textContent = corpus.embedded;
    const noWorker = row.querySelector(".no-worker");
    if (noWorker) noWorker.hidden = !searchable;
    if (corpus.state === "failed") {
      row.querySelector("[data-role=outcome]").replaceChildren(...corpus.errors.slice(0, 3).map((e) =>
        el("div", {className: "error"}, errorText(e))));
    }
  }

  /* What a job that has not ended does or waits for ("queued: waiting for a worker on queue
   * 'interactive'", "stalled: no progress for 6 min ..."), and a Restart button while it is
   * stalled (the API lets the job's owner and the project's admins restart it). */
  function showActivity(row, job) {
    if (job.state_detail === undefined) return;
    let box = row.querySelector("[data-role=activity]");
    if (!box) {
      box = el("div", {className: "job-activity"});
      box.dataset.role = "activity";
      (row.querySelector("[data-role=outcome]") || row).before(box);
    }
    const parts = job.state_detail ? [el("span", {className: job.stalled ? "warning" : "hint"}, job.state_detail)] : [];
    if (job.stalled && job.restart_url) {
      const button = el("button", {type: "button", className: "restart-job"}, "Restart");
      button.addEventListener("click", async () => {
        button.disabled = true;
        const answer = await api(job.restart_url, "POST");
        if (answer.ok) {  // the row's polling goes on and shows how the job ends
          box.replaceChildren(el("span", {className: "hint"}, "Restarted: queued again."));
        } else {
          button.disabled = false;
          box.append(el("span", {className: "error"}, ` ${(answer.data && answer.data.detail) || "could not restart"}`));
        }
      });
      parts.push(" ", button);
    }
    box.replaceChildren(...parts);
  }

  /* Poll ``url`` while the row's state is one of ``running``, showing each answer. */
  async function follow(row, {url, running, showAnswer, every, what}) {
    let failures = 0;
    while (running.includes(row.dataset.state)) {
      await new Promise((resolve) => setTimeout(resolve, every));
      let answer;
      try { answer = await api(url, "GET"); } catch (networkError) { answer = {ok: false}; }
      if (answer.ok) { failures = 0; showAnswer(row, answer.data); showActivity(row, answer.data); continue; }
      failures += 1;
      if (failures >= 10) {
        row.querySelector("[data-role=outcome]").replaceChildren(
          el("span", {className: "error"}, `Lost contact with the server: reload the page to see how the ${what} ended.`));
        return;
      }
    }
  }

  // The leaderboard page follows scoring runs the same way (system_runs.js).
  Object.assign(Workbench, {follow, showJobState, showActivity, errorText});

  document.querySelectorAll(".import-job").forEach((row) => follow(row, {
    url: row.dataset.jobUrl, running: ["queued", "running"], showAnswer: show, every: POLL_MS, what: "import"}));
  // Without a worker nothing embeds a whole corpus: "embedding" is not a state that ends, so
  // the row is followed through its import only and says so (the page's text).
  document.querySelectorAll(".corpus-row").forEach((row) => follow(row, {
    url: row.dataset.corpusUrl, running: "noWorker" in row.dataset ? ["queued", "importing"] : ["queued", "importing", "embedding"],
    showAnswer: showCorpus,
    every: CORPUS_POLL_MS, what: "corpus import"}));
})();
