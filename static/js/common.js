/* Shared helpers of the pages: DOM building, API calls, the page state, the widgets the annotation pages share. */

export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

/* Build an element; children are nodes or strings (always inserted as text, never HTML). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "className") node.className = value;
    else if (key === "value") node.value = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export async function api(url, method, body) {
  const response = await fetch(url, {
    method,
    credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken(), "Accept": "application/json"},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await response.json(); } catch (e) { data = {detail: response.statusText}; }
  return {status: response.status, ok: response.ok, data};
}

/* Index of the first unit (e.g. "segments") with a disagreement, or 0. */
export function firstDisagreement(disagreedPaths, unit) {
  const pattern = new RegExp(`^${unit}\\[(\\d+)\\]`);
  const indexes = [...disagreedPaths].map((path) => Number(pattern.exec(path)?.[1])).filter(Number.isFinite);
  return indexes.length ? Math.min(...indexes) : 0;
}

/* The parts every annotation page has (_workbench.html, _savebar.html, the keys legend). */
export function pageParts() {
  const byId = (id) => document.getElementById(id);
  return {editorEl: byId("editor"), statusEl: byId("save-status"), errorsEl: byId("errors"),
    completenessEl: byId("completeness"), submitButton: byId("submit"), keysEl: byId("keys")};
}

/* Before a submit: the first unit that still lacks something (``lacking[i]``: what unit i
 * lacks), as one error that also says how many others do; null when all are done. */
export function incomplete(lacking, unitName, path) {
  const first = lacking.findIndex((lacks) => lacks.length);
  if (first < 0) return null;
  const others = lacking.filter((lacks, k) => k !== first && lacks.length).length;
  return {index: first, error: {field: `${path}[${first}]`, message: `still to do: ${lacking[first].join("; ")}`
    + (others ? ` (and ${others} more ${unitName}${others === 1 ? "" : "s"} not done)` : "")}};
}

/* The completeness line ("2/3 claims done") and whether the submit button is ready. */
export function showProgress(parts, {done, total, unit, readOnly}) {
  parts.completenessEl.textContent = `${done}/${total} ${unit}s done`;
  if (readOnly) return;
  const ready = done === total;
  parts.submitButton.setAttribute("aria-disabled", ready ? "false" : "true");
  parts.submitButton.title = ready ? "Ctrl+Enter" : `Every ${unit} must be done first (Ctrl+Enter shows what is missing)`;
}

/* What the current unit still lacks, under its editor: "Still to do: …", or that it is done. */
export function showLacks(node, lacks, unit) {
  node.classList.toggle("done", !lacks.length);
  node.replaceChildren(lacks.length ? `Still to do: ${lacks.join("; ")}` : `This ${unit} is done.`);
}

/* What a consolidation page is handed about the annotators' answers (empty on an annotator's). */
export function theirAnswers(state) {
  return {disagreed: new Set(state.disagreed || []), annotations: state.annotations || [], alignment: state.alignment || []};
}

// -- widgets the annotation pages share ----------------------------------------------------

/* An http(s) link (what references and evidence URLs must be). */
export const isHttpUrl = (value) => { try { return ["http:", "https:"].includes(new URL(value).protocol); } catch (e) { return false; } };
export const classes = (...names) => names.filter(Boolean).join(" ");
export const keyName = (key) => (/^[A-Z]$/.test(key) ? `⇧${key}` : key);

/* A row of toggle buttons, one per [value, label, key] option; the chosen one is pressed. */
export function choices(options, value, onPick, {className = "", disagree = false, invalid = false, readOnly = false} = {}) {
  return el("div", {className: classes("fc-choices", className, disagree && "disagree", invalid && "invalid"), role: "group"},
    options.map(([optionValue, text, key]) => el("button", {
      type: "button", "data-value": String(optionValue), "aria-pressed": value === optionValue ? "true" : "false",
      disabled: readOnly, title: key ? `key ${keyName(key)}` : null, onclick: () => onPick(optionValue),
    }, text, key ? " " : null, key ? el("kbd", {}, keyName(key)) : null)));
}

/* A machine suggestion beside the choices: shown, never selected. */
export function suggested(value, show, title = "machine suggestion: not selected for you") {
  if (value === null || value === undefined || value === "") return null;
  return el("span", {className: "fc-suggested", title}, `suggested: ${show(value)}`);
}

/* One box per annotator: who, a "Use A" button, their value (consolidation pages). */
export function theirBox(annotation, content, button) {
  const who = `${annotation.slot} (${annotation.annotator}${annotation.role === "third_rater" ? ", third rater" : ""})`;
  return el("div", {className: "fc-their", "data-slot": annotation.slot},
    el("div", {className: "fc-their-head"}, el("span", {className: "fc-who"}, who), button),
    content);
}

export function compareRow(boxes, agreed, columns) {
  return el("div", {className: classes("fc-compare", agreed && "agreed"), style: `--columns: ${columns}`}, boxes);
}

/* The page's state (``json_script`` "state", built by the view with the kind's label lists and
 * rules in ``rules``) and whether it is a consolidation page. */
export function pageState() {
  const state = JSON.parse(document.getElementById("state").textContent);
  const page = document.querySelector("[data-page]");
  return {state, consolidation: page?.dataset.page === "consolidate"};
}

/* A label list from the server ([[value, text], ...]) with the page's keys, in list order. */
export function withKeys(options, keys = []) {
  return options.map(([value, text], i) => [value, text, keys[i]]);
}

/* The text the server gives for ``value`` in a label list, else ``fallback`` (the value itself). */
export function labelOf(options, value, fallback = value ?? "–") {
  return (options.find(([v]) => v === value) || [value, fallback])[1];
}
