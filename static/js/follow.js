/* ONE follow() for every job page (imports, corpora, scoring runs, rater runs, the agreement
 * computation): poll a job's address, show each answer and what the job waits for, offer a
 * Restart of a stalled job. Server text goes in as text only. */
import {api, el} from "./common.js";

export const errorText = (e) => `line ${e.line}, field ${e.field}: ${e.message}`;

/* A job row's state badge (``label`` or the state capitalised) and progress bar
 * (``done`` of ``total``, hidden once ``ended``). */
export function showJobState(row, {state, label, done, total, ended}) {
  const badge = row.querySelector("[data-role=state]");
  badge.textContent = label || state.charAt(0).toUpperCase() + state.slice(1);
  badge.className = `badge ${state}`;
  row.dataset.state = state;
  const bar = row.querySelector("[data-role=progress]");
  bar.max = total || 1;
  bar.value = done;
  if (ended !== undefined) bar.hidden = ended;
}

/* What a job that has not ended does or waits for ("queued: waiting for a worker on queue
 * 'interactive'", "stalled: no progress for 6 min ..."), and a Restart button while it is
 * stalled (the API lets the job's owner and the project's admins restart it). */
export function showActivity(row, job) {
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

/*
 * The one polling loop of the job pages: while ``running()``, wait ``every`` ms and ask ``url``;
 * each answer goes to ``onAnswer``, and after ``patience`` failed asks in a row ``onLost``
 * gets the last one and the loop ends.
 */
export async function followJob({url, every, running, onAnswer, onLost, patience = 10}) {
  let failures = 0;
  while (running()) {
    await new Promise((resolve) => setTimeout(resolve, every));
    let answer;
    try { answer = await api(url, "GET"); } catch (networkError) {
      answer = {ok: false, status: 0, data: {detail: "no connection to the server"}};
    }
    if (answer.ok) { failures = 0; onAnswer(answer.data); continue; }
    failures += 1;
    if (failures >= patience) { onLost(answer); return; }
  }
}

/* A job row (``data-state``, a [data-role=outcome] box): followed while its state is one of
 * ``running``, each answer shown by ``showAnswer`` with what the job waits for. */
export function follow(row, {url, running, showAnswer, every, what}) {
  return followJob({url, every, running: () => running.includes(row.dataset.state),
    onAnswer: (data) => { showAnswer(row, data); showActivity(row, data); },
    onLost: () => row.querySelector("[data-role=outcome]").replaceChildren(
      el("span", {className: "error"}, `Lost contact with the server: reload the page to see how the ${what} ended.`))});
}
