/* LLM rater page: the Restart button of a stalled run (the page itself reloads while runs go on). */
import {api} from "./common.js";

document.querySelectorAll(".rater-run .restart-job").forEach((button) => button.addEventListener("click", async () => {
  button.disabled = true;
  const answer = await api(button.dataset.restartUrl, "POST");
  if (answer.ok) { window.location.reload(); return; }
  button.disabled = false;
  button.parentElement.querySelector("[data-role=restart-error]").textContent =
    (answer.data && answer.data.detail) || "could not restart the run";
}));
