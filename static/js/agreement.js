/* Agreement page while its numbers are computed by a background task: poll the page's status
 * address (Workbench.follow, import_jobs.js), show the task's progress, and reload the page when
 * the result is stored, or when the point estimates arrive on a page that has none yet.
 * Server text goes in as text only. */
"use strict";

(() => {
  const {el, follow} = Workbench;
  const POLL_MS = 1000;
  const box = document.getElementById("agreement-computing");
  if (!box) return;
  const hasPoints = box.dataset.points === "true";

  function show(row, status) {
    if (status.state === "ready" || (status.points && !hasPoints)) {
      row.dataset.state = "reloading"; // ends the polling
      window.location.reload();
      return;
    }
    row.dataset.state = status.state;
    if (status.state === "failed") {
      row.querySelector("[data-role=outcome]").replaceChildren(el("span", {className: "error"},
        `The agreement could not be computed: ${status.error}. Reload the page in a few minutes to try again.`));
      return;
    }
    const bar = row.querySelector("[data-role=progress]");
    bar.max = status.total || 1;
    bar.value = status.done;
    row.querySelector("[data-role=step]").textContent = status.total
      ? `${status.step} (${status.done} of ${status.total} steps done)` : status.step || "waiting for a worker";
  }

  follow(box, {url: box.dataset.statusUrl, running: ["queued", "running"], showAnswer: show, every: POLL_MS,
    what: "agreement computation"});
})();
