/* Project form: a new project's guidelines start as its kind's template; another kind swaps in
 * its own template unless the text was edited. */
const source = document.getElementById("guideline-templates");
const kind = document.getElementById("id_kind");
const text = document.getElementById("id_guidelines");
if (source && kind && text) {
  const templates = JSON.parse(source.textContent);
  kind.addEventListener("change", () => {
    const untouched = !text.value.trim() || Object.values(templates).includes(text.value);
    if (untouched) text.value = templates[kind.value] || "";
  });
}
