/* D-FActScore: group a paragraph's facts by individual, link each individual to a candidate page,
 * label each fact against that page. The annotator's page and, with {consolidation: true}, the
 * consolidator's. Payload shape: annotation/kinds/dfactscore.py (validate_payload).
 * The page's state is one object (`page`, made in start()); each region has its render function. */
import * as common from "../js/common.js";
import {choices, classes, compareRow, el, suggested, theirBox, withKeys} from "../js/common.js";
import {pageKeys, showLegendKeys} from "../js/keys.js";
import {pageSaver} from "../js/save.js";
import {entryRules, lacking, leaves} from "../js/completeness.js";
import {endPage, submitAndContinue} from "../js/ending.js";
import {canonical, groupName, marked, normalise, pageName, provenanceOf, readable, responseStretches, suggestedGroupOf} from "./dfactscore_model.js";

// The key of each requirement and of each label list's entries (state.keys, from page.py), by
// its path: "facts[3].label" -> "s / n / i".
const KEYS = pageKeys(common.pageState().state.keys);

const withKey = (path, what) => {
  const key = KEYS.keyOf(path);
  return key ? `${what} (${key})` : what;
};
const dis = (page, path) => page.consolidation && page.disagreed.has(path);
const nameOf = (page, link) => pageName(page.candidates, link);
const theirPayload = (page, annotation) => normalise(annotation.payload, page.factTexts.length);

// -- what is still missing -------------------------------------------------------------------

// By the kind's completeness rules (state.rules.completeness); "$factscore_pass" and the like
// read the item's passes. A lack is [field, what the page calls it].
const lacks = (page) => lacking(page.completeness, page.data, page.passes);

function factLacks(page, i) {
  return lacking(page.factRules, page.data.facts[i], page.passes).map((lack) => [lack.field, lack.name]);
}

function groupLacks(page, g) {
  return lacks(page).filter((lack) => lack.field === "groups" && lack.index === g)
    .flatMap((lack) => (lack.lacks ? lack.lacks.map((inner) => [inner.field, inner.name]) : [["", lack.name]]));
}

function missingFields(page) {
  return leaves(lacks(page)).map((lack) => ({field: lack.path, message: lack.path.startsWith("facts[") ? `${lack.name} missing` : lack.name}));
}

/* What is still required, counted by kind: "9 × supported by any page? (a / ⇧A)". */
function stillRequired(page) {
  const counts = new Map();
  leaves(lacks(page)).forEach((lack) => {
    const text = withKey(lack.path, lack.rule.counted_as || lack.name);
    counts.set(text, (counts.get(text) || 0) + 1);
  });
  return [...counts].map(([text, n]) => `${n} × ${text}`);
}

// -- changes: each updates page.data and goes through changed(page) -----------------------------

function changed(page) {
  render(page);
  renderCompleteness(page);
  page.saver.schedule();
}

function setIndividuals(page, count) {
  const {data} = page;
  count = Math.max(0, Math.min(count, 30));
  while (data.groups.length < count) data.groups.push({link: null});
  data.groups.length = count;
  data.individuals = count;
  data.facts.forEach((f) => { if (Number.isInteger(f.group) && f.group >= count) f.group = null; });
  changed(page);
}

function setFact(page, i, patch) {
  const {data} = page;
  if (page.readOnly || i < 0 || i >= data.facts.length) return;
  if (Number.isInteger(patch.group) && patch.group >= data.individuals) {
    while (data.groups.length <= patch.group) data.groups.push({link: null});
    data.individuals = data.groups.length;
  }
  Object.assign(data.facts[i], patch);
  changed(page);
}

function setLink(page, g, link) {
  if (page.readOnly || !page.data.groups[g]) return;
  page.data.groups[g].link = link;
  changed(page);
}

/* Consolidation: an annotator's whole Step A (how many, who holds which fact, the links). */
function takeGrouping(page, annotation) {
  const theirs = theirPayload(page, annotation);
  page.data.individuals = theirs.individuals;
  page.data.groups = structuredClone(theirs.groups);
  page.data.facts.forEach((f, i) => { f.group = theirs.facts[i].group; });
  changed(page);
}

function takeFact(page, annotation, i) {
  const theirs = theirPayload(page, annotation).facts[i];
  setFact(page, i, {group: theirs.group, label: theirs.label, any_page: theirs.any_page, entity: theirs.entity});
}

function select(page, index) {
  page.current = Math.max(0, Math.min(page.data.facts.length - 1, index));
  render(page);
  page.dom.facts.children[page.current]?.scrollIntoView({block: "nearest"});
  const span = page.pieces.find(({covering}) => covering.includes(page.current))?.node;
  const box = span?.closest(".source");
  if (span && box && box.scrollHeight > box.clientHeight) span.scrollIntoView({block: "nearest"});
}

function goToField(page, field) {
  const match = /^(facts|groups)\[(\d+)\]/.exec(field || "");
  if (match && match[1] === "facts") select(page, Number(match[2]));
  else if (match) page.dom.individuals.querySelector(`.dfs-individual[data-group="${match[2]}"] select`)?.focus();
  else page.dom.individuals.querySelector(".dfs-count button")?.focus();
}

// -- the paragraph with its facts ------------------------------------------------------------

/* The response's pieces as spans (built once); each knows the facts it covers. */
function buildResponse(page, box) {
  const text = typeof page.response === "string" ? page.response : "";
  const pieces = [];
  const nodes = responseStretches(text, page.facts).map(({from, to, covering, starts}) => {
    if (!covering.length) return text.slice(from, to);
    const node = el("span", {className: "dfs-fact-span", "data-facts": covering.join(" "),
      title: `fact${covering.length > 1 ? "s" : ""} ${covering.map((i) => i + 1).join(", ")}`,
      onclick: () => {
        // Several facts on one stretch: each click goes on to the next of them.
        const at = covering.indexOf(page.current);
        select(page, covering[at < 0 ? 0 : (at + 1) % covering.length]);
      }},
    starts.length ? el("sup", {className: "dfs-fact-number"}, starts.map((i) => i + 1).join(",")) : null, text.slice(from, to));
    pieces.push({node, covering});
    return node;
  });
  if (box && pieces.length) box.replaceChildren(...nodes);
  return pieces;
}

function renderResponse(page) {
  const {data, current} = page;
  const group = data.facts[current]?.group;
  page.pieces.forEach(({node, covering}) => {
    node.classList.toggle("current", covering.includes(current));
    node.classList.toggle("done", covering.every((i) => !factLacks(page, i).length));
    node.dataset.group = covering.map((i) => data.facts[i].group).filter(Number.isInteger).map((g) => g + 1).join(" ");
  });
  document.querySelectorAll(".dfs-fact-span").forEach((node) => node.classList.toggle("same-individual",
    Number.isInteger(group) && node.dataset.facts.split(" ").some((i) => data.facts[Number(i)].group === group)));
}

// -- the candidate pages, side by side, searchable -------------------------------------------

function linkedPage(page) {
  const group = page.data.facts[page.current]?.group;
  const link = group === null || group === undefined ? null : page.data.groups[group]?.link;
  return Number.isInteger(link) ? link : null;
}

function renderPages(page, box) {
  if (!box) return;
  const {candidates, current} = page;
  const query = (page.dom.search?.value || "").trim();
  const linked = linkedPage(page);
  let shown = 0;
  box.replaceChildren(...candidates.map((candidate, c) => {
    const matches = !query || `${candidate.title}\n${candidate.text}`.toLowerCase().includes(query.toLowerCase());
    if (matches) shown += 1;
    const group = page.data.facts[current]?.group;
    return el("article", {className: classes("dfs-page", c === linked && "linked"), "data-index": c, hidden: !matches},
      el("h3", {}, `${c + 1}. `, ...marked(candidate.title || "", query)),
      c === linked ? el("p", {className: "dfs-linked-note"}, `linked to ${groupName(group)}: label fact ${current + 1} against this page`) : null,
      candidate.url ? el("a", {className: "dfs-url", href: candidate.url, target: "_blank", rel: "noopener noreferrer"}, candidate.url) : null,
      el("div", {className: "dfs-page-text", tabindex: 0}, ...marked(candidate.text || "", query)));
  }));
  const count = document.getElementById("dfs-search-count");
  if (count) count.textContent = query ? `${shown} of ${candidates.length} pages match` : `${candidates.length} pages`;
  const first = box.querySelector(".dfs-page:not([hidden]) mark");
  if (query && first) first.scrollIntoView({block: "nearest"});
  else if (linked !== null) box.querySelector(".dfs-page.linked")?.scrollIntoView({block: "nearest"});
}

// -- errors and completeness -----------------------------------------------------------------

function showErrors(page, errors, summary = null) {
  page.invalid = new Set(errors.map((e) => e.field).filter(Boolean));
  page.dom.errors.replaceChildren(
    ...(summary ? [el("li", {className: "summary"}, summary)] : []),
    ...errors.map((e) => el("li", {}, e.field
      ? el("button", {type: "button", className: "link", onclick: () => goToField(page, e.field)}, readable(e.field)) : null,
    e.field ? `: ${e.message}` : e.message)));
  render(page);
}

function listIncomplete(page) {
  const fields = missingFields(page);
  if (!fields.length) page.listing = false;
  const facts = new Set(fields.map((f) => /^facts\[(\d+)\]/.exec(f.field)?.[1]).filter(Boolean)).size;
  showErrors(page, fields, fields.length ? `${page.consolidation ? "Gold record not saved" : "Not submitted"}: ${fields.length} field${fields.length === 1 ? "" : "s"} not done`
    + (facts ? ` (${facts} fact${facts === 1 ? "" : "s"})` : "") + "." : null);
  return fields;
}

function renderCompleteness(page) {
  const {data, dom} = page;
  const done = data.facts.filter((_, i) => !factLacks(page, i).length).length;
  const groupsDone = data.groups.filter((_, g) => !groupLacks(page, g).length).length;
  const required = stillRequired(page);
  dom.completeness.textContent = `${done}/${page.factTexts.length} facts done · ${groupsDone}/${data.individuals} individuals linked`
    + (required.length ? ` · still required: ${required.join(", ")}` : "");
  dom.completeness.title = dom.completeness.textContent;
  if (page.listing) listIncomplete(page);
}

// -- Step A: individuals ---------------------------------------------------------------------

function chip(page, i) {
  return el("button", {type: "button", className: classes("dfs-chip", i === page.current && "current"), draggable: page.readOnly ? null : "true",
    "data-fact": i, title: page.factTexts[i], onclick: () => select(page, i),
    ondragstart: (event) => { event.dataTransfer.setData("text/plain", String(i)); event.dataTransfer.effectAllowed = "move"; }},
  `${i + 1}`, el("span", {className: "dfs-chip-text"}, page.factTexts[i]));
}

function dropZone(page, group, attrs, ...children) {
  return el("div", {...attrs,
    ondragover: (event) => { if (!page.readOnly) { event.preventDefault(); event.currentTarget.classList.add("dragover"); } },
    ondragleave: (event) => event.currentTarget.classList.remove("dragover"),
    ondrop: (event) => {
      event.preventDefault();
      event.currentTarget.classList.remove("dragover");
      const fact = Number(event.dataTransfer.getData("text/plain"));
      if (Number.isInteger(fact)) { setFact(page, fact, {group}); select(page, fact); }
    }}, ...children);
}

function linkOptions(page, value) {
  return [
    el("option", {value: "", selected: value === null || value === undefined}, "— link to a page (g, then 1–9) —"),
    ...page.candidates.map((candidate, c) => el("option", {value: String(c), selected: value === c}, `${c + 1}. ${candidate.title}`)),
    el("option", {value: "none", selected: value === "none"}, "0. none of these")];
}

function renderIndividual(page, group, g) {
  const {data, invalid, suggestion, readOnly, annotations} = page;
  const path = `groups[${g}]`;
  const members = data.facts.map((f, i) => (f.group === g ? i : -1)).filter((i) => i >= 0);
  const link = suggestion?.links?.[g];
  const currentGroup = data.facts[page.current]?.group;
  return dropZone(page, g, {className: classes("dfs-individual", g === currentGroup && "current", invalid.has(path) && "invalid"), "data-group": g},
    el("div", {className: "dfs-individual-head"},
      el("span", {className: "dfs-individual-name"}, `Individual ${g + 1}`),
      el("label", {className: classes("dfs-link", dis(page, `${path}.link`) && "disagree", invalid.has(`${path}.link`) && "invalid")},
        el("span", {className: "visually-hidden"}, `Page of individual ${g + 1}`),
        el("select", {disabled: readOnly, "aria-label": `Page of individual ${g + 1}`,
          onchange: (event) => setLink(page, g, event.target.value === "" ? null : event.target.value === "none" ? "none" : Number(event.target.value))},
        linkOptions(page, group.link))),
      link === undefined || !Array.isArray(suggestion?.groups) ? null
        : suggested(link === null ? "none of these" : nameOf(page, link), (v) => v, provenanceOf(suggestion, "grouping"))),
    page.consolidation ? compareRow(annotations.map((a) => theirBox(a,
      el("span", {}, nameOf(page, theirPayload(page, a).groups[g]?.link)), null)), !dis(page, `${path}.link`), annotations.length) : null,
    el("div", {className: "dfs-chips"}, members.length ? members.map((i) => chip(page, i)) : el("span", {className: "hint"}, "drop facts here (or key " + (g + 1) + ")")));
}

function renderIndividuals(page, box) {
  const {data, invalid, suggestion, readOnly, annotations, disagreed} = page;
  const loose = data.facts.map((f, i) => (Number.isInteger(f.group) && f.group < data.individuals ? -1 : i)).filter((i) => i >= 0);
  const suggestedCount = Array.isArray(suggestion?.groups) ? suggestion.groups.length : null;
  const node = el("div", {id: "dfs-individuals-body"},
    el("div", {className: classes("dfs-count", dis(page, "individuals") && "disagree", invalid.has("individuals") && "invalid")},
      el("span", {className: "dfs-count-label"}, "Individuals in the paragraph:"),
      el("button", {type: "button", className: "small", disabled: readOnly || data.individuals === 0, title: "key -",
        "aria-label": "one individual fewer", onclick: () => setIndividuals(page, data.individuals - 1)}, "−"),
      el("output", {className: "dfs-count-value"}, String(data.individuals)),
      el("button", {type: "button", className: "small", disabled: readOnly, title: "key +", "aria-label": "one individual more",
        onclick: () => setIndividuals(page, data.individuals + 1)}, "+"),
      suggestedCount === null ? null : suggested(suggestedCount, String, provenanceOf(suggestion, "grouping"))),
    page.consolidation ? compareRow(annotations.map((a) => theirBox(a,
      el("span", {}, `${a.payload?.individuals ?? "–"} individual${a.payload?.individuals === 1 ? "" : "s"}`),
      readOnly ? null : el("button", {type: "button", className: "small fc-use", onclick: () => takeGrouping(page, a)}, `Use ${a.slot}'s grouping`))),
    !dis(page, "individuals") && ![...disagreed].some((p) => /^groups|\.group$/.test(p)), annotations.length) : null,
    data.groups.map((group, g) => renderIndividual(page, group, g)),
    dropZone(page, null, {className: classes("dfs-individual", "dfs-loose")},
      el("div", {className: "dfs-individual-head"}, el("span", {className: "dfs-individual-name"}, "Not in an individual yet")),
      el("div", {className: "dfs-chips"}, loose.length ? loose.map((i) => chip(page, i)) : el("span", {className: "hint"}, "every fact is in an individual"))));
  box.replaceChildren(node);
}

// -- Step B: facts ---------------------------------------------------------------------------

function supportHints(page, i) {
  const support = page.suggestion?.support?.[i];
  if (!Array.isArray(support) || !support.length) return null;
  return el("div", {className: "dfs-support", title: provenanceOf(page.suggestion, "support")}, "Page support (suggested): ",
    support.map((s) => el("span", {className: classes("dfs-support-item", s.supported && "yes")},
      `${(s.candidate ?? 0) + 1}. ${page.candidates[s.candidate]?.title ?? "?"} ${s.supported ? "✓" : "✗"}${typeof s.score === "number" ? ` ${s.score.toFixed(2)}` : ""}`)));
}

function theirRow(page, i, field, show) {
  if (!page.consolidation) return null;
  const {annotations} = page;
  const values = annotations.map((a) => theirPayload(page, a).facts[i][field]);
  return compareRow(annotations.map((a, k) => theirBox(a, el("span", {}, show(values[k], a)),
    page.readOnly ? null : el("button", {type: "button", className: "small fc-use",
      onclick: () => {
        const patch = {[field]: values[k]};
        // Their individual: with their link, unless ours is already set.
        if (field === "group" && Number.isInteger(values[k]) && (page.data.groups[values[k]]?.link ?? null) === null) {
          const theirLink = theirPayload(page, a).groups[values[k]]?.link ?? null;
          setFact(page, i, patch);
          if (theirLink !== null) setLink(page, values[k], theirLink);
          return;
        }
        setFact(page, i, patch);
      }}, `Use ${a.slot}`))), !dis(page, `facts[${i}].${field}`), annotations.length);
}

function renderFact(page, i) {
  const {data, invalid, suggestion, readOnly, passes, candidates, rules, current} = page;
  const fact = data.facts[i];
  const path = `facts[${i}]`;
  const bad = (name) => invalid.has(`${path}.${name}`);
  const groupOptions = data.groups.map((_, g) => [g, `${g + 1}`, g < 9 ? String(g + 1) : null]);
  const link = Number.isInteger(fact.group) ? data.groups[fact.group]?.link : null;
  const suggestedGroup = suggestedGroupOf(suggestion, i);
  const entityOptions = [
    el("option", {value: "", selected: fact.entity === null || fact.entity === undefined}, "— who is it about? (e, then 1–9) —"),
    ...candidates.map((candidate, c) => el("option", {value: String(c), selected: fact.entity === c}, `${c + 1}. ${candidate.title}`)),
    el("option", {value: "none", selected: fact.entity === "none"}, "0. none of these")];
  const row = (labelText, control, ...rest) => el("div", {className: "dfs-row"}, el("span", {className: "dfs-row-label"}, labelText), control, ...rest);
  const labelText = (v) => rules.labelText[v] || "–";
  return el("li", {className: classes("dfs-fact", i === current && "current", !factLacks(page, i).length && "complete",
    [...invalid].some((f) => f.startsWith(`${path}.`)) && "invalid"), "data-index": i,
  onclick: () => { if (i !== page.current) select(page, i); }},
  el("p", {className: "dfs-fact-text"}, el("b", {}, `${i + 1}. `), page.factTexts[i]),
  row("Individual", data.individuals
    ? choices(groupOptions, fact.group, (g) => setFact(page, i, {group: g}), {className: "dfs-group", disagree: dis(page, `${path}.group`), invalid: bad("group"), readOnly})
    : el("span", {className: classes("hint", bad("group") && "invalid")}, "add individuals first (+)"),
  suggestedGroup === null ? null : suggested(suggestedGroup, (g) => `individual ${g + 1}`, provenanceOf(suggestion, "grouping"))),
  theirRow(page, i, "group", (g, a) => `${groupName(g)}${Number.isInteger(g) ? ` → ${nameOf(page, theirPayload(page, a).groups[g]?.link)}` : ""}`),
  row("Label", choices(rules.labels, fact.label, (label) => setFact(page, i, {label}), {className: "dfs-label", disagree: dis(page, `${path}.label`), invalid: bad("label"), readOnly}),
    suggested(suggestion?.labels?.[i], (v) => rules.labelText[v] || v, provenanceOf(suggestion, "support"))),
  el("p", {className: "dfs-against"}, fact.group === null || fact.group === undefined ? "Put the fact in an individual, then label it against that individual's page."
    : `against ${groupName(fact.group)}'s page: ${nameOf(page, link)}${link === "none" ? " (no page: not supported unless irrelevant)" : ""}`),
  theirRow(page, i, "label", labelText),
  passes.factscore_pass ? row("Any page", choices(rules.anyPage, fact.any_page, (v) => setFact(page, i, {any_page: v}),
    {className: "dfs-any-page", disagree: dis(page, `${path}.any_page`), invalid: bad("any_page"), readOnly})) : null,
  passes.factscore_pass ? theirRow(page, i, "any_page", labelText) : null,
  passes.entity_pass ? row("About", el("select", {className: classes("dfs-entity", dis(page, `${path}.entity`) && "disagree", bad("entity") && "invalid"),
    disabled: readOnly, "aria-label": `Who fact ${i + 1} is about`,
    onchange: (event) => setFact(page, i, {entity: event.target.value === "" ? null : event.target.value === "none" ? "none" : Number(event.target.value)})},
  entityOptions)) : null,
  passes.entity_pass ? theirRow(page, i, "entity", (v) => nameOf(page, v)) : null,
  i === current && factLacks(page, i).length && !readOnly ? el("p", {className: "dfs-still hint"},
    `Still required for this fact: ${factLacks(page, i).map(([name, what]) => withKey(`facts[${i}].${name}`, what)).join("; ")}`) : null,
  supportHints(page, i));
}

function renderFacts(page, box) {
  page.data.facts.forEach((_, i) => {
    const node = renderFact(page, i);
    const old = box.children[i];
    if (old) old.replaceWith(node);
    else box.append(node);
  });
}

/* The whole page from its state (the completeness line aside: renderCompleteness). */
function render(page) {
  renderIndividuals(page, page.dom.individuals);
  renderFacts(page, page.dom.facts);
  renderResponse(page);
  renderPages(page, page.dom.pages);
}

// -- submit and keys -------------------------------------------------------------------------

async function submit(page) {
  page.listing = true;
  const fields = listIncomplete(page);
  if (fields.length) { goToField(page, fields[0].field); return; }
  await submitAndContinue(page.saver, page.dom.submit, page.nextUrl);
}

/* A command key's first half ("g", "e", "t"): the next key finishes it. */
function startPrefix(page, prefix, text) {
  page.prefix = prefix;
  if (page.dom.prefix) page.dom.prefix.textContent = text;
}

function finishPrefix(page, key) {
  const started = page.prefix;
  startPrefix(page, null, "");
  if (started === "t") {
    const annotation = page.annotations.find((a) => a.slot.toLowerCase() === key.toLowerCase());
    if (annotation) takeFact(page, annotation, page.current);
    return true;
  }
  if (!/^[0-9]$/.test(key)) return false;
  const value = key === "0" ? "none" : Number(key) - 1;
  if (value !== "none" && value >= page.candidates.length) return true;
  if (started === "g") {
    const group = page.data.facts[page.current].group;
    if (Number.isInteger(group)) setLink(page, group, value);
  } else if (started === "e" && page.passes.entity_pass) setFact(page, page.current, {entity: value});
  return true;
}

function onKey(page, event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const {data, passes, rules} = page;
  const key = event.key;
  if (key === "j" || key === "ArrowDown") { event.preventDefault(); select(page, page.current + 1); return; }
  if (key === "k" || key === "ArrowUp") { event.preventDefault(); select(page, page.current - 1); return; }
  if (key === "/") { event.preventDefault(); page.dom.search?.focus(); return; }
  if (page.readOnly) return;
  if (page.prefix) { event.preventDefault(); finishPrefix(page, key); return; }
  if (/^[1-9]$/.test(key)) {
    event.preventDefault();
    // A new individual only one past the last: a stray 9 does not make nine of them.
    if (Number(key) <= data.individuals + 1) setFact(page, page.current, {group: Number(key) - 1});
    return;
  }
  const actions = {
    "0": () => setFact(page, page.current, {group: null}),
    "+": () => setIndividuals(page, data.individuals + 1), "=": () => setIndividuals(page, data.individuals + 1),
    "-": () => setIndividuals(page, data.individuals - 1),
    g: () => startPrefix(page, "g", "g… page 1–9, 0 none of these (links the current fact's individual)"),
  };
  for (const [value, , labelKey] of rules.labels) actions[labelKey] = () => setFact(page, page.current, {label: value});
  if (passes.factscore_pass) for (const [value, , pageKey] of rules.anyPage) actions[pageKey] = () => setFact(page, page.current, {any_page: value});
  if (passes.entity_pass) actions.e = () => startPrefix(page, "e", "e… page 1–9, 0 none of these (who the fact is about)");
  if (page.consolidation) actions.t = () => startPrefix(page, "t", `t… ${page.annotations.map((a) => a.slot.toLowerCase()).join(" / ")}: take that answer for the fact`);
  if (actions[key]) { event.preventDefault(); actions[key](); }
}

// -- the page --------------------------------------------------------------------------------

function start(state, options = {}) {
  const consolidation = Boolean(options.consolidation);
  const choiceLists = state.rules.choices;
  const completeness = state.rules.completeness;
  const content = state.content || {};
  const facts = content.facts || [];
  const theirs = common.theirAnswers(state);
  const parts = common.pageParts();
  const page = {
    consolidation,
    readOnly: state.read_only,
    nextUrl: state.next_url,
    rules: {labels: withKeys(choiceLists.label, KEYS.choiceKeys("facts[].label")),
      anyPage: withKeys(choiceLists.any_page, KEYS.choiceKeys("facts[].any_page")),
      labelText: Object.fromEntries(choiceLists.label_text)},
    completeness,
    factRules: entryRules(completeness, "facts"),
    response: state.response,
    facts,
    factTexts: facts.map((f) => f.text),
    candidates: content.candidates || [],
    passes: state.passes || content.passes || {},
    suggestion: consolidation ? null : state.suggestion,
    disagreed: theirs.disagreed,
    annotations: theirs.annotations.map((a) => ({...a, payload: canonical(normalise(a.payload, facts.length))})),
    data: normalise(state.payload, facts.length),
    dom: {editor: parts.editorEl, errors: parts.errorsEl, completeness: parts.completenessEl, submit: parts.submitButton,
      individuals: document.getElementById("dfs-individuals"), facts: document.getElementById("dfs-facts"),
      pages: document.getElementById("dfs-pages"), search: document.getElementById("dfs-search"),
      prefix: document.getElementById("dfs-prefix")},
    current: 0,
    prefix: null,           // "g", "e" or "t": the next key finishes the command
    listing: false,         // after a refused submit, the list shrinks as fields get done
    invalid: new Set(),     // fields the last check or the server refused
    pieces: [],
    saver: null,
  };
  page.saver = pageSaver({state, consolidation, payload: () => page.data, onErrors: (errors, summary) => showErrors(page, errors, summary)});
  page.pieces = buildResponse(page, document.getElementById("dfs-response"));

  page.dom.search?.addEventListener("input", () => renderPages(page, page.dom.pages));
  page.dom.search?.addEventListener("keydown", (event) => { if (event.key === "Enter") event.preventDefault(); });
  const firstDisputed = common.firstDisagreement(page.disagreed, "facts");
  page.current = Math.min(firstDisputed, Math.max(0, page.data.facts.length - 1));
  render(page);
  renderCompleteness(page);
  if (!page.factTexts.length) page.dom.completeness.textContent = "no facts: submit with 0 individuals";
  showLegendKeys(state.keys);
  endPage({state, parts, submit: () => submit(page), onKey: (event) => onKey(page, event)});
  page.dom.editor?.classList.add("ready");
}

const {state, consolidation} = common.pageState();
start(state, {consolidation});
