/* Agreement page while its numbers are computed by a background task: poll the page's status
 * address (follow.js), show the task's progress, and reload the page when
 * the result is stored, or when the point estimates arrive on a page that has none yet.
 * Server text goes in as text only. */
import {el} from "./common.js";
import {follow} from "./follow.js";

const POLL_MS = 1000;
const box = document.getElementById("agreement-computing");
const hasPoints = box?.dataset.points === "true";

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

if (box) follow(box, {url: box.dataset.statusUrl, running: ["queued", "running"], showAnswer: show, every: POLL_MS,
  what: "agreement computation"});
