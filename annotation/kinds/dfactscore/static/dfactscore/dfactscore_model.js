/* D-FActScore's answers as plain data: blank payloads, the merge's canonical order, the response
 * cut at the facts' spans, readable field paths and page names (dfactscore.js draws the page). */
import {el} from "../js/common.js";

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/* Text with every case-insensitive occurrence of ``query`` in a <mark> (text nodes only). */
export function marked(text, query) {
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
export function normalise(payload, factCount) {
  const individuals = Number.isInteger(payload?.individuals) ? payload.individuals : 0;
  const groups = Array.from({length: individuals}, (_, g) => ({link: null, ...(payload?.groups?.[g] || {})}));
  const facts = Array.from({length: factCount}, (_, i) => ({group: null, label: null, any_page: null, entity: null,
    ...(payload?.facts?.[i] || {})}));
  return {individuals, groups, facts};
}

/* As the kind's merge compares them (kinds/dfactscore.py canonical): individuals renumbered by
 * their first fact, so an annotator's "individual 2" is the draft's "individual 2". */
export function canonical(payload) {
  const order = [];
  payload.facts.forEach((f) => { if (Number.isInteger(f.group) && !order.includes(f.group)) order.push(f.group); });
  for (let g = 0; g < payload.individuals; g += 1) if (!order.includes(g)) order.push(g);
  return {individuals: payload.individuals, groups: order.map((old) => payload.groups[old] || {link: null}),
    facts: payload.facts.map((f) => ({...f, group: Number.isInteger(f.group) && order.includes(f.group) ? order.indexOf(f.group) : null}))};
}

/* The response cut at the facts' span boundaries: [{from, to, covering}], covering the facts
 * over that stretch, narrowest span first (a click goes to the fact most about this stretch). */
export function responseStretches(text, facts) {
  const spans = facts.map((f) => (Array.isArray(f.span) && f.span[0] < f.span[1] && f.span[1] <= text.length ? f.span : null));
  const cuts = [...new Set([0, text.length, ...spans.filter(Boolean).flat()])].sort((a, b) => a - b);
  const stretches = [];
  for (let k = 0; k + 1 < cuts.length; k += 1) {
    const [from, to] = [cuts[k], cuts[k + 1]];
    const covering = spans.map((s, i) => (s && s[0] <= from && to <= s[1] ? i : -1)).filter((i) => i >= 0)
      .sort((a, b) => (spans[a][1] - spans[a][0]) - (spans[b][1] - spans[b][0]) || a - b);
    const starts = covering.filter((i) => spans[i][0] === from).sort((a, b) => a - b);
    stretches.push({from, to, covering, starts});
  }
  return stretches;
}

/* "facts[3].label" -> "Fact 4, label"; "groups[0].link" -> "Individual 1, link" */
export function readable(field) {
  const match = /^(facts|groups)\[(\d+)\](?:\.(\w+))?/.exec(field || "");
  if (!match) return field === "individuals" ? "Number of individuals" : field;
  const what = {group: "individual", any_page: "any page", link: "page link"}[match[3]] || match[3];
  return `${match[1] === "facts" ? "Fact" : "Individual"} ${Number(match[2]) + 1}${what ? `, ${what}` : ""}`;
}

export const pageName = (candidates, link) => (link === "none" ? "none of these" : link === null || link === undefined ? "–"
  : `${link + 1}. ${candidates[link]?.title ?? "?"}`);
export const groupName = (group) => (group === null || group === undefined ? "–" : `individual ${group + 1}`);

/* The individual the machine suggests for fact i, or null. */
export function suggestedGroupOf(suggestion, i) {
  const groups = suggestion?.groups;
  if (!Array.isArray(groups)) return null;
  const g = groups.findIndex((members) => Array.isArray(members) && members.includes(i));
  return g < 0 ? null : g;
}

export function provenanceOf(suggestion, part) {
  const source = suggestion?.provenance?.[part];
  return `suggested by ${source || "the machine"}: not selected for you`;
}
