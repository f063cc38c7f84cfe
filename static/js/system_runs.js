/* Leaderboard page: follow the uploads being checked and scored (progress bar, then the outcome)
 * by polling the API with follow.js; a run that ends scored reloads the page so
 * the table and the plot show it. Server text goes in as text only. */
import {el} from "./common.js";
import {errorText, follow, showJobState} from "./follow.js";

const POLL_MS = 1000;

function show(row, run) {
  showJobState(row, {state: run.state, done: run.units_done, total: run.units_total,
                     ended: run.state === "done" || run.state === "failed"});
  row.querySelector("[data-role=units]").textContent = `${run.units_done} of ${run.units_total} steps`;
  const outcome = row.querySelector("[data-role=outcome]");
  if (run.state === "failed") {
    outcome.replaceChildren(el("span", {className: "error"}, "Nothing was stored: ", run.errors.map(errorText).join("; ")));
  } else if (run.state === "done") {
    outcome.replaceChildren("Scored: the leaderboard is being reloaded…");
    window.location.reload();
  }
}

document.querySelectorAll(".system-run").forEach((row) => follow(row, {
  url: row.dataset.runUrl, running: ["queued", "running"], showAnswer: show, every: POLL_MS, what: "scoring"}));
