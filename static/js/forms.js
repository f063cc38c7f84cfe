/* Every page: a form with ``data-confirm`` asks before it is sent, a select with
 * ``data-autosubmit`` sends its form when changed (no inline handlers in the templates). */
document.querySelectorAll("form[data-confirm]").forEach((form) => form.addEventListener("submit", (event) => {
  if (!window.confirm(form.dataset.confirm)) event.preventDefault();
}));
document.querySelectorAll("select[data-autosubmit]").forEach((select) => select.addEventListener("change", () => select.form.submit()));
