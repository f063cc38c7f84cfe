/* D-FActScore: group a paragraph's facts by individual, link each individual to a candidate page,
 * label each fact against that page. The annotator's page and, with {consolidation: true}, the
 * consolidator's. Payload shape: annotation/kinds/dfactscore.py (validate_payload). */
import * as common from "./common.js";
import {choices, classes, compareRow, el, suggested, theirBox, withKeys} from "./common.js";
import {REQUIRED_FIELD_KEYS} from "./keys.js";
import {pageSaver} from "./save.js";
import {lacking, leaves} from "./completeness.js";
import {endPage, submitAndContinue} from "./ending.js";

// The keys of the label lists, in the order of the lists the kind hands the page (state.rules).
const KEYS = {label: ["s", "n", "i"], any_page: ["a", "A"]};
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/* Text with every case-insensitive occurrence of ``query`` in a <mark> (text nodes only). */
function marked(text, query) {
  if (!query) return [text];
  const parts = [];
  const pattern = new RegExp(escapeRegExp(query), "giu");
  let at = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    parts.push(text.slice(at, match.index), el("mark", {}, match[0]));
    at = match.index + match[0].length;
  }
  parts.push(text.slice(at));
  return parts;
}

/* The paper's rule for Step A: a fact sits in one individual; absent fields become null. */
function normalise(payload, factCount) {
  const individuals = Number.isInteger(payload?.individuals) ? payload.individuals : 0;
  const groups = Array.from({length: individuals}, (_, g) => ({link: null, ...(payload?.groups?.[g] || {})}));
  const facts = Array.from({length: factCount}, (_, i) => ({group: null, label: null, any_page: null, entity: null,
    ...(payload?.facts?.[i] || {})}));
  return {individuals, groups, facts};
}

/* As the kind's merge compares them (kinds/dfactscore.py canonical): individuals renumbered by
 * their first fact, so an annotator's "individual 2" is the draft's "individual 2". */
function canonical(payload) {
  const order = [];
  payload.facts.forEach((f) => { if (Number.isInteger(f.group) && !order.includes(f.group)) order.push(f.group); });
  for (let g = 0; g < payload.individuals; g += 1) if (!order.includes(g)) order.push(g);
  return {individuals: payload.individuals, groups: order.map((old) => payload.groups[old] || {link: null}),
    facts: payload.facts.map((f) => ({...f, group: Number.isInteger(f.group) && order.includes(f.group) ? order.indexOf(f.group) : null}))};
}

function start(state, options = {}) {
  const consolidation = Boolean(options.consolidation);
  const rules = state.rules.choices;
  const LABELS = withKeys(rules.label, KEYS.label);
  const ANY_PAGE = withKeys(rules.any_page, KEYS.any_page);
  const LABEL_TEXT = Object.fromEntries(rules.label_text);
  const COMPLETENESS = state.rules.completeness;
  const FACT_RULES = COMPLETENESS.find((rule) => rule.field === "facts").rules;
  const content = state.content || {};
  const factTexts = (content.facts || []).map((f) => f.text);
  const candidates = content.candidates || [];
  const passes = state.passes || content.passes || {};
  const suggestion = consolidation ? null : state.suggestion;
  const theirs = common.theirAnswers(state);
  const disagreed = theirs.disagreed;
  const annotations = theirs.annotations.map((a) => ({...a, payload: canonical(normalise(a.payload, (content.facts || []).length))}));
  const readOnly = state.read_only;
  const data = normalise(state.payload, factTexts.length);
  const parts = common.pageParts();
  const {editorEl, errorsEl, completenessEl, submitButton} = parts;
  const individualsEl = document.getElementById("dfs-individuals");
  const factsEl = document.getElementById("dfs-facts");
  const pagesEl = document.getElementById("dfs-pages");
  const searchEl = document.getElementById("dfs-search");
  const prefixEl = document.getElementById("dfs-prefix");
  let current = 0;
  let prefix = null;          // "g", "e" or "t": the next key finishes the command
  let listing = false;        // after a refused submit, the list shrinks as fields get done
  let invalid = new Set();    // fields the last check or the server refused

  const saver = pageSaver({state, consolidation, payload: () => data, onErrors: showErrors});

  const pageName = (link) => (link === "none" ? "none of these" : link === null || link === undefined ? "–"
    : `${link + 1}. ${candidates[link]?.title ?? "?"}`);
  const groupName = (group) => (group === null || group === undefined ? "–" : `individual ${group + 1}`);
  const dis = (path) => consolidation && disagreed.has(path);

  // -- the paragraph with its facts ------------------------------------------------------------

  /* Pieces of the response between the facts' span boundaries; each knows the facts it covers. */
  const pieces = (() => {
    const box = document.getElementById("dfs-response");
    const text = typeof state.response === "string" ? state.response : "";
    const spans = (content.facts || []).map((f) => (Array.isArray(f.span) && f.span[0] < f.span[1] && f.span[1] <= text.length ? f.span : null));
    const cuts = [...new Set([0, text.length, ...spans.filter(Boolean).flat()])].sort((a, b) => a - b);
    const result = [];
    const nodes = [];
    for (let k = 0; k + 1 < cuts.length; k += 1) {
      const [from, to] = [cuts[k], cuts[k + 1]];
      // Narrowest span first: a click goes to the fact most about this stretch.
      const covering = spans.map((s, i) => (s && s[0] <= from && to <= s[1] ? i : -1)).filter((i) => i >= 0)
        .sort((a, b) => (spans[a][1] - spans[a][0]) - (spans[b][1] - spans[b][0]) || a - b);
      if (!covering.length) { nodes.push(text.slice(from, to)); continue; }
      const starts = covering.filter((i) => spans[i][0] === from).sort((a, b) => a - b);
      const node = el("span", {className: "dfs-fact-span", "data-facts": covering.join(" "),
        title: `fact${covering.length > 1 ? "s" : ""} ${covering.map((i) => i + 1).join(", ")}`,
        onclick: () => {
          // Several facts on one stretch: each click goes on to the next of them.
          const at = covering.indexOf(current);
          select(covering[at < 0 ? 0 : (at + 1) % covering.length]);
        }},
      starts.length ? el("sup", {className: "dfs-fact-number"}, starts.map((i) => i + 1).join(",")) : null, text.slice(from, to));
      result.push({node, covering});
      nodes.push(node);
    }
    if (box && result.length) box.replaceChildren(...nodes);
    return result;
  })();

  // -- the candidate pages, side by side, searchable -------------------------------------------

  function linkedPage() {
    const group = data.facts[current]?.group;
    const link = group === null || group === undefined ? null : data.groups[group]?.link;
    return Number.isInteger(link) ? link : null;
  }

  function renderPages() {
    if (!pagesEl) return;
    const query = (searchEl?.value || "").trim();
    const linked = linkedPage();
    let shown = 0;
    pagesEl.replaceChildren(...candidates.map((page, c) => {
      const matches = !query || `${page.title}\n${page.text}`.toLowerCase().includes(query.toLowerCase());
      if (matches) shown += 1;
      const group = data.facts[current]?.group;
      return el("article", {className: classes("dfs-page", c === linked && "linked"), "data-index": c, hidden: !matches},
        el("h3", {}, `${c + 1}. `, ...marked(page.title || "", query)),
        c === linked ? el("p", {className: "dfs-linked-note"}, `linked to ${groupName(group)}: label fact ${current + 1} against this page`) : null,
        page.url ? el("a", {className: "dfs-url", href: page.url, target: "_blank", rel: "noopener noreferrer"}, page.url) : null,
        el("div", {className: "dfs-page-text", tabindex: 0}, ...marked(page.text || "", query)));
    }));
    const count = document.getElementById("dfs-search-count");
    if (count) count.textContent = query ? `${shown} of ${candidates.length} pages match` : `${candidates.length} pages`;
    const first = pagesEl.querySelector(".dfs-page:not([hidden]) mark");
    if (query && first) first.scrollIntoView({block: "nearest"});
    else if (linked !== null) pagesEl.querySelector(".dfs-page.linked")?.scrollIntoView({block: "nearest"});
  }

  // -- what is still missing -------------------------------------------------------------------

  // By the kind's completeness rules (state.rules.completeness); "$factscore_pass" and the like
  // read the item's passes. A lack is [field, what the page calls it].
  const lacks = () => lacking(COMPLETENESS, data, passes);

  function factLacks(i) {
    return lacking(FACT_RULES, data.facts[i], passes).map((lack) => [lack.field, lack.name]);
  }

  function groupLacks(g) {
    return lacks().filter((lack) => lack.field === "groups" && lack.index === g)
      .flatMap((lack) => (lack.lacks ? lack.lacks.map((inner) => [inner.field, inner.name]) : [["", lack.name]]));
  }

  function missingFields() {
    return leaves(lacks()).map((lack) => ({field: lack.path, message: lack.path.startsWith("facts[") ? `${lack.name} missing` : lack.name}));
  }

  /* "facts[3].label" -> "Fact 4, label"; "groups[0].link" -> "Individual 1, link" */
  function readable(field) {
    const match = /^(facts|groups)\[(\d+)\](?:\.(\w+))?/.exec(field || "");
    if (!match) return field === "individuals" ? "Number of individuals" : field;
    const what = {group: "individual", any_page: "any page", link: "page link"}[match[3]] || match[3];
    return `${match[1] === "facts" ? "Fact" : "Individual"} ${Number(match[2]) + 1}${what ? `, ${what}` : ""}`;
  }

  function goToField(field) {
    const match = /^(facts|groups)\[(\d+)\]/.exec(field || "");
    if (match && match[1] === "facts") select(Number(match[2]));
    else if (match) individualsEl.querySelector(`.dfs-individual[data-group="${match[2]}"] select`)?.focus();
    else individualsEl.querySelector(".dfs-count button")?.focus();
  }

  function showErrors(errors, summary = null) {
    invalid = new Set(errors.map((e) => e.field).filter(Boolean));
    errorsEl.replaceChildren(
      ...(summary ? [el("li", {className: "summary"}, summary)] : []),
      ...errors.map((e) => el("li", {}, e.field
        ? el("button", {type: "button", className: "link", onclick: () => goToField(e.field)}, readable(e.field)) : null,
      e.field ? `: ${e.message}` : e.message)));
    renderAll();
  }

  function listIncomplete() {
    const fields = missingFields();
    if (!fields.length) listing = false;
    const facts = new Set(fields.map((f) => /^facts\[(\d+)\]/.exec(f.field)?.[1]).filter(Boolean)).size;
    showErrors(fields, fields.length ? `${consolidation ? "Gold record not saved" : "Not submitted"}: ${fields.length} field${fields.length === 1 ? "" : "s"} not done`
      + (facts ? ` (${facts} fact${facts === 1 ? "" : "s"})` : "") + "." : null);
    return fields;
  }

  // The key of each requirement (keys.js), by its path: "facts[3].label" -> "s / n / i".
  const KEY_OF = REQUIRED_FIELD_KEYS["dfactscore/1"];
  const withKey = (path, what) => {
    const key = KEY_OF[path.replace(/\[\d+\]/g, "[]")];
    return key ? `${what} (${key})` : what;
  };

  /* What is still required, counted by kind: "9 × supported by any page? (a / ⇧A)". */
  function stillRequired() {
    const counts = new Map();
    leaves(lacks()).forEach((lack) => {
      const text = withKey(lack.path, lack.rule.counted_as || lack.name);
      counts.set(text, (counts.get(text) || 0) + 1);
    });
    return [...counts].map(([text, n]) => `${n} × ${text}`);
  }

  function updateCompleteness() {
    const done = data.facts.filter((_, i) => !factLacks(i).length).length;
    const groupsDone = data.groups.filter((_, g) => !groupLacks(g).length).length;
    const required = stillRequired();
    completenessEl.textContent = `${done}/${factTexts.length} facts done · ${groupsDone}/${data.individuals} individuals linked`
      + (required.length ? ` · still required: ${required.join(", ")}` : "");
    completenessEl.title = completenessEl.textContent;
    if (listing) listIncomplete();
  }

  // -- changes ---------------------------------------------------------------------------------

  function changed() {
    renderAll();
    updateCompleteness();
    saver.schedule();
  }

  function setIndividuals(count) {
    count = Math.max(0, Math.min(count, 30));
    while (data.groups.length < count) data.groups.push({link: null});
    data.groups.length = count;
    data.individuals = count;
    data.facts.forEach((f) => { if (Number.isInteger(f.group) && f.group >= count) f.group = null; });
    changed();
  }

  function setFact(i, patch) {
    if (readOnly || i < 0 || i >= data.facts.length) return;
    if (Number.isInteger(patch.group) && patch.group >= data.individuals) {
      while (data.groups.length <= patch.group) data.groups.push({link: null});
      data.individuals = data.groups.length;
    }
    Object.assign(data.facts[i], patch);
    changed();
  }

  function setLink(g, link) {
    if (readOnly || !data.groups[g]) return;
    data.groups[g].link = link;
    changed();
  }

  /* Consolidation: an annotator's whole Step A (how many, who holds which fact, the links). */
  function takeGrouping(annotation) {
    const theirs = normalise(annotation.payload, factTexts.length);
    data.individuals = theirs.individuals;
    data.groups = structuredClone(theirs.groups);
    data.facts.forEach((f, i) => { f.group = theirs.facts[i].group; });
    changed();
  }

  function takeFact(annotation, i) {
    const theirs = normalise(annotation.payload, factTexts.length).facts[i];
    setFact(i, {group: theirs.group, label: theirs.label, any_page: theirs.any_page, entity: theirs.entity});
  }

  // -- Step A: individuals ---------------------------------------------------------------------

  function chip(i) {
    return el("button", {type: "button", className: classes("dfs-chip", i === current && "current"), draggable: readOnly ? null : "true",
      "data-fact": i, title: factTexts[i], onclick: () => select(i),
      ondragstart: (event) => { event.dataTransfer.setData("text/plain", String(i)); event.dataTransfer.effectAllowed = "move"; }},
    `${i + 1}`, el("span", {className: "dfs-chip-text"}, factTexts[i]));
  }

  function dropZone(group, attrs, ...children) {
    return el("div", {...attrs,
      ondragover: (event) => { if (!readOnly) { event.preventDefault(); event.currentTarget.classList.add("dragover"); } },
      ondragleave: (event) => event.currentTarget.classList.remove("dragover"),
      ondrop: (event) => {
        event.preventDefault();
        event.currentTarget.classList.remove("dragover");
        const fact = Number(event.dataTransfer.getData("text/plain"));
        if (Number.isInteger(fact)) { setFact(fact, {group}); select(fact); }
      }}, ...children);
  }

  function suggestedGroupOf(i) {
    const groups = suggestion?.groups;
    if (!Array.isArray(groups)) return null;
    const g = groups.findIndex((members) => Array.isArray(members) && members.includes(i));
    return g < 0 ? null : g;
  }

  function provenanceOf(part) {
    const source = suggestion?.provenance?.[part];
    return `suggested by ${source || "the machine"}: not selected for you`;
  }

  function renderIndividuals() {
    const linkOptions = (value) => [
      el("option", {value: "", selected: value === null || value === undefined}, "— link to a page (g, then 1–9) —"),
      ...candidates.map((page, c) => el("option", {value: String(c), selected: value === c}, `${c + 1}. ${page.title}`)),
      el("option", {value: "none", selected: value === "none"}, "0. none of these")];
    const currentGroup = data.facts[current]?.group;
    const boxes = data.groups.map((group, g) => {
      const path = `groups[${g}]`;
      const members = data.facts.map((f, i) => (f.group === g ? i : -1)).filter((i) => i >= 0);
      const link = suggestion?.links?.[g];
      return dropZone(g, {className: classes("dfs-individual", g === currentGroup && "current", invalid.has(path) && "invalid"), "data-group": g},
        el("div", {className: "dfs-individual-head"},
          el("span", {className: "dfs-individual-name"}, `Individual ${g + 1}`),
          el("label", {className: classes("dfs-link", dis(`${path}.link`) && "disagree", invalid.has(`${path}.link`) && "invalid")},
            el("span", {className: "visually-hidden"}, `Page of individual ${g + 1}`),
            el("select", {disabled: readOnly, "aria-label": `Page of individual ${g + 1}`,
              onchange: (event) => setLink(g, event.target.value === "" ? null : event.target.value === "none" ? "none" : Number(event.target.value))},
            linkOptions(group.link))),
          link === undefined || !Array.isArray(suggestion?.groups) ? null
            : suggested(link === null ? "none of these" : pageName(link), (v) => v, provenanceOf("grouping"))),
        consolidation ? compareRow(annotations.map((a) => theirBox(a,
          el("span", {}, pageName(normalise(a.payload, factTexts.length).groups[g]?.link)), null)), !dis(`${path}.link`), annotations.length) : null,
        el("div", {className: "dfs-chips"}, members.length ? members.map(chip) : el("span", {className: "hint"}, "drop facts here (or key " + (g + 1) + ")")));
    });
    const loose = data.facts.map((f, i) => (Number.isInteger(f.group) && f.group < data.individuals ? -1 : i)).filter((i) => i >= 0);
    const suggestedCount = Array.isArray(suggestion?.groups) ? suggestion.groups.length : null;
    const node = el("div", {id: "dfs-individuals-body"},
      el("div", {className: classes("dfs-count", dis("individuals") && "disagree", invalid.has("individuals") && "invalid")},
        el("span", {className: "dfs-count-label"}, "Individuals in the paragraph:"),
        el("button", {type: "button", className: "small", disabled: readOnly || data.individuals === 0, title: "key -",
          "aria-label": "one individual fewer", onclick: () => setIndividuals(data.individuals - 1)}, "−"),
        el("output", {className: "dfs-count-value"}, String(data.individuals)),
        el("button", {type: "button", className: "small", disabled: readOnly, title: "key +", "aria-label": "one individual more",
          onclick: () => setIndividuals(data.individuals + 1)}, "+"),
        suggestedCount === null ? null : suggested(suggestedCount, String, provenanceOf("grouping"))),
      consolidation ? compareRow(annotations.map((a) => theirBox(a,
        el("span", {}, `${a.payload?.individuals ?? "–"} individual${a.payload?.individuals === 1 ? "" : "s"}`),
        readOnly ? null : el("button", {type: "button", className: "small fc-use", onclick: () => takeGrouping(a)}, `Use ${a.slot}'s grouping`))),
      !dis("individuals") && ![...disagreed].some((p) => /^groups|\.group$/.test(p)), annotations.length) : null,
      boxes,
      dropZone(null, {className: classes("dfs-individual", "dfs-loose")},
        el("div", {className: "dfs-individual-head"}, el("span", {className: "dfs-individual-name"}, "Not in an individual yet")),
        el("div", {className: "dfs-chips"}, loose.length ? loose.map(chip) : el("span", {className: "hint"}, "every fact is in an individual"))));
    individualsEl.replaceChildren(node);
  }

  // -- Step B: facts ---------------------------------------------------------------------------

  function supportHints(i) {
    const support = suggestion?.support?.[i];
    if (!Array.isArray(support) || !support.length) return null;
    return el("div", {className: "dfs-support", title: provenanceOf("support")}, "Page support (suggested): ",
      support.map((s) => el("span", {className: classes("dfs-support-item", s.supported && "yes")},
        `${(s.candidate ?? 0) + 1}. ${candidates[s.candidate]?.title ?? "?"} ${s.supported ? "✓" : "✗"}${typeof s.score === "number" ? ` ${s.score.toFixed(2)}` : ""}`)));
  }

  function theirRow(i, field, show) {
    if (!consolidation) return null;
    const values = annotations.map((a) => normalise(a.payload, factTexts.length).facts[i][field]);
    return compareRow(annotations.map((a, k) => theirBox(a, el("span", {}, show(values[k], a)),
      readOnly ? null : el("button", {type: "button", className: "small fc-use",
        onclick: () => {
          const patch = {[field]: values[k]};
          // Their individual: with their link, unless ours is already set.
          if (field === "group" && Number.isInteger(values[k]) && (data.groups[values[k]]?.link ?? null) === null) {
            const theirLink = normalise(a.payload, factTexts.length).groups[values[k]]?.link ?? null;
            setFact(i, patch);
            if (theirLink !== null) setLink(values[k], theirLink);
            return;
          }
          setFact(i, patch);
        }}, `Use ${a.slot}`))), !dis(`facts[${i}].${field}`), annotations.length);
  }

  function renderFact(i) {
    const fact = data.facts[i];
    const path = `facts[${i}]`;
    const bad = (name) => invalid.has(`${path}.${name}`);
    const groupOptions = data.groups.map((_, g) => [g, `${g + 1}`, g < 9 ? String(g + 1) : null]);
    const link = Number.isInteger(fact.group) ? data.groups[fact.group]?.link : null;
    const suggestedGroup = suggestedGroupOf(i);
    const entityOptions = [
      el("option", {value: "", selected: fact.entity === null || fact.entity === undefined}, "— who is it about? (e, then 1–9) —"),
      ...candidates.map((page, c) => el("option", {value: String(c), selected: fact.entity === c}, `${c + 1}. ${page.title}`)),
      el("option", {value: "none", selected: fact.entity === "none"}, "0. none of these")];
    const row = (labelText, control, ...rest) => el("div", {className: "dfs-row"}, el("span", {className: "dfs-row-label"}, labelText), control, ...rest);
    const node = el("li", {className: classes("dfs-fact", i === current && "current", !factLacks(i).length && "complete",
      [...invalid].some((f) => f.startsWith(`${path}.`)) && "invalid"), "data-index": i,
    onclick: () => { if (i !== current) select(i); }},
    el("p", {className: "dfs-fact-text"}, el("b", {}, `${i + 1}. `), factTexts[i]),
    row("Individual", data.individuals
      ? choices(groupOptions, fact.group, (g) => setFact(i, {group: g}), {className: "dfs-group", disagree: dis(`${path}.group`), invalid: bad("group"), readOnly})
      : el("span", {className: classes("hint", bad("group") && "invalid")}, "add individuals first (+)"),
    suggestedGroup === null ? null : suggested(suggestedGroup, (g) => `individual ${g + 1}`, provenanceOf("grouping"))),
    theirRow(i, "group", (g, a) => `${groupName(g)}${Number.isInteger(g) ? ` → ${pageName(normalise(a.payload, factTexts.length).groups[g]?.link)}` : ""}`),
    row("Label", choices(LABELS, fact.label, (label) => setFact(i, {label}), {className: "dfs-label", disagree: dis(`${path}.label`), invalid: bad("label"), readOnly}),
      suggested(suggestion?.labels?.[i], (v) => LABEL_TEXT[v] || v, provenanceOf("support"))),
    el("p", {className: "dfs-against"}, fact.group === null || fact.group === undefined ? "Put the fact in an individual, then label it against that individual's page."
      : `against ${groupName(fact.group)}'s page: ${pageName(link)}${link === "none" ? " (no page: not supported unless irrelevant)" : ""}`),
    theirRow(i, "label", (v) => LABEL_TEXT[v] || "–"),
    passes.factscore_pass ? row("Any page", choices(ANY_PAGE, fact.any_page, (v) => setFact(i, {any_page: v}),
      {className: "dfs-any-page", disagree: dis(`${path}.any_page`), invalid: bad("any_page"), readOnly})) : null,
    passes.factscore_pass ? theirRow(i, "any_page", (v) => LABEL_TEXT[v] || "–") : null,
    passes.entity_pass ? row("About", el("select", {className: classes("dfs-entity", dis(`${path}.entity`) && "disagree", bad("entity") && "invalid"),
      disabled: readOnly, "aria-label": `Who fact ${i + 1} is about`,
      onchange: (event) => setFact(i, {entity: event.target.value === "" ? null : event.target.value === "none" ? "none" : Number(event.target.value)})},
    entityOptions)) : null,
    passes.entity_pass ? theirRow(i, "entity", (v) => pageName(v)) : null,
    i === current && factLacks(i).length && !readOnly ? el("p", {className: "dfs-still hint"},
      `Still required for this fact: ${factLacks(i).map(([name, what]) => withKey(`facts[${i}].${name}`, what)).join("; ")}`) : null,
    supportHints(i));
    const old = factsEl.children[i];
    if (old) old.replaceWith(node);
    else factsEl.append(node);
  }

  function renderAll() {
    renderIndividuals();
    data.facts.forEach((_, i) => renderFact(i));
    const group = data.facts[current]?.group;
    pieces.forEach(({node, covering}) => {
      node.classList.toggle("current", covering.includes(current));
      node.classList.toggle("done", covering.every((i) => !factLacks(i).length));
      node.dataset.group = covering.map((i) => data.facts[i].group).filter(Number.isInteger).map((g) => g + 1).join(" ");
    });
    document.querySelectorAll(".dfs-fact-span").forEach((node) => node.classList.toggle("same-individual",
      Number.isInteger(group) && node.dataset.facts.split(" ").some((i) => data.facts[Number(i)].group === group)));
    renderPages();
  }

  function select(index) {
    current = Math.max(0, Math.min(data.facts.length - 1, index));
    renderAll();
    factsEl.children[current]?.scrollIntoView({block: "nearest"});
    const span = pieces.find(({covering}) => covering.includes(current))?.node;
    const box = span?.closest(".source");
    if (span && box && box.scrollHeight > box.clientHeight) span.scrollIntoView({block: "nearest"});
  }

  // -- submit and keys -------------------------------------------------------------------------

  async function submit() {
    listing = true;
    const fields = listIncomplete();
    if (fields.length) { goToField(fields[0].field); return; }
    await submitAndContinue(saver, submitButton, state.next_url);
  }

  function showPrefix(text) {
    if (prefixEl) prefixEl.textContent = text || "";
  }

  function finishPrefix(key) {
    const started = prefix;
    prefix = null;
    showPrefix("");
    if (started === "t") {
      const annotation = annotations.find((a) => a.slot.toLowerCase() === key.toLowerCase());
      if (annotation) takeFact(annotation, current);
      return true;
    }
    if (!/^[0-9]$/.test(key)) return false;
    const value = key === "0" ? "none" : Number(key) - 1;
    if (value !== "none" && value >= candidates.length) return true;
    if (started === "g") {
      const group = data.facts[current].group;
      if (Number.isInteger(group)) setLink(group, value);
    } else if (started === "e" && passes.entity_pass) setFact(current, {entity: value});
    return true;
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    if (key === "j" || key === "ArrowDown") { event.preventDefault(); select(current + 1); return; }
    if (key === "k" || key === "ArrowUp") { event.preventDefault(); select(current - 1); return; }
    if (key === "/") { event.preventDefault(); searchEl?.focus(); return; }
    if (readOnly) return;
    if (prefix) { event.preventDefault(); finishPrefix(key); return; }
    if (/^[1-9]$/.test(key)) {
      event.preventDefault();
      // A new individual only one past the last: a stray 9 does not make nine of them.
      if (Number(key) <= data.individuals + 1) setFact(current, {group: Number(key) - 1});
      return;
    }
    const actions = {
      "0": () => setFact(current, {group: null}),
      "+": () => setIndividuals(data.individuals + 1), "=": () => setIndividuals(data.individuals + 1),
      "-": () => setIndividuals(data.individuals - 1),
      g: () => { prefix = "g"; showPrefix("g… page 1–9, 0 none of these (links the current fact's individual)"); },
    };
    for (const [value, , labelKey] of LABELS) actions[labelKey] = () => setFact(current, {label: value});
    if (passes.factscore_pass) for (const [value, , pageKey] of ANY_PAGE) actions[pageKey] = () => setFact(current, {any_page: value});
    if (passes.entity_pass) actions.e = () => { prefix = "e"; showPrefix("e… page 1–9, 0 none of these (who the fact is about)"); };
    if (consolidation) actions.t = () => { prefix = "t"; showPrefix(`t… ${annotations.map((a) => a.slot.toLowerCase()).join(" / ")}: take that answer for the fact`); };
    if (actions[key]) { event.preventDefault(); actions[key](); }
  }

  searchEl?.addEventListener("input", renderPages);
  searchEl?.addEventListener("keydown", (event) => { if (event.key === "Enter") event.preventDefault(); });
  const firstDisputed = common.firstDisagreement(disagreed, "facts");
  current = Math.min(firstDisputed, Math.max(0, data.facts.length - 1));
  renderAll();
  updateCompleteness();
  if (!factTexts.length) completenessEl.textContent = "no facts: submit with 0 individuals";
  endPage({state, parts, submit, onKey});
  editorEl?.classList.add("ready");
}

const {state, consolidation} = common.pageState();
start(state, {consolidation});

