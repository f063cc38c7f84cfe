/* Project page: refuse files over the size limit before uploading, and follow running imports
 * (progress bar, then the outcome) and corpora (import, then background embedding) by polling
 * the API. Server text goes in as text only. */
import {el} from "./common.js";
import {errorText, follow, showJobState} from "./follow.js";

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

document.querySelectorAll(".import-job").forEach((row) => follow(row, {
  url: row.dataset.jobUrl, running: ["queued", "running"], showAnswer: show, every: POLL_MS, what: "import"}));
// Without a worker nothing embeds a whole corpus: "embedding" is not a state that ends, so
// the row is followed through its import only and says so (the page's text).
document.querySelectorAll(".corpus-row").forEach((row) => follow(row, {
  url: row.dataset.corpusUrl, running: "noWorker" in row.dataset ? ["queued", "importing"] : ["queued", "importing", "embedding"],
  showAnswer: showCorpus,
  every: CORPUS_POLL_MS, what: "corpus import"}));
