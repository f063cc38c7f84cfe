/* What an answer still lacks before a submit, by the completeness rules the server hands the
 * page (state.rules.completeness, from annotation/kinds/<kind>/page.py): one evaluator for
 * every kind, so no page script holds a rule of its own.
 *
 * A rule: {field, name} and optionally
 *   filled: "value" (default: not null, not blank, not an empty list) | "set" (not null) | "http_url";
 *   when / unless: {field: expected} that must all hold / that cancel the rule when all hold
 *     (expected: a value; a list of values; {not: [values]}; {filled: bool}; true/false for
 *     truthiness; a field "$name" reads the page's context, e.g. the item's passes);
 *   rules: the field is a list of objects, each checked by these rules;
 *   each: the field is a list, each entry must be filled (or, with referenced_by [list, field],
 *     its index must be named by that field of some entry of the sibling list); when_each
 *     reads the entry at the same index of the sibling lists it names;
 *   min: the field is a number, at least this. */
import {isHttpUrl} from "./common.js";

function filled(value, how = "value") {
  if (value === null || value === undefined) return false;
  if (how === "set") return true;
  if (how === "http_url") return isHttpUrl(value);
  if (typeof value === "string") return value.trim() !== "";
  if (Array.isArray(value)) return value.length > 0;
  return true;
}

function holds(expected, actual) {
  if (Array.isArray(expected)) return expected.includes(actual ?? null);
  if (expected && typeof expected === "object") {
    if ("not" in expected) return !expected.not.includes(actual ?? null);
    return filled(actual) === Boolean(expected.filled);
  }
  if (typeof expected === "boolean") return Boolean(actual) === expected;
  return (actual ?? null) === expected;
}

function meets(conditions, read) {
  return Object.entries(conditions || {}).every(([field, expected]) => holds(expected, read(field)));
}

/* Every lack of ``unit``: [{path, field, name, rule, index?, lacks?}], in the rules' order
 * (``lacks``: what an entry of a list checked by ``rules`` lacks). */
export function lacking(rules, unit, context = {}, prefix = "") {
  const read = (field) => (field.startsWith("$") ? context[field.slice(1)] : unit?.[field]);
  const out = [];
  for (const rule of rules || []) {
    if (!meets(rule.when, read) || (rule.unless && meets(rule.unless, read))) continue;
    const value = unit?.[rule.field];
    const path = `${prefix}${rule.field}`;
    const base = {field: rule.field, name: rule.name, rule};
    if (rule.rules) {
      (value || []).forEach((entry, k) => {
        const lacks = lacking(rule.rules, entry, context, `${path}[${k}].`);
        if (lacks.length) out.push({...base, path: `${path}[${k}]`, index: k, lacks});
      });
    } else if (rule.each) {
      (value || []).forEach((entry, k) => {
        if (!meets(rule.when_each, (field) => unit?.[field]?.[k])) return;
        const done = rule.referenced_by
          ? (unit?.[rule.referenced_by[0]] || []).some((other) => other?.[rule.referenced_by[1]] === k)
          : filled(entry, rule.filled);
        if (!done) out.push({...base, path: `${path}[${k}]`, index: k});
      });
    } else if (rule.min !== undefined ? !(Number(value) >= rule.min) : !filled(value, rule.filled)) {
      out.push({...base, path});
    }
  }
  return out;
}

/* The rules each entry of the list ``field`` is checked by, for a page that checks one entry
 * (a segment, a sentence, a fact) at a time. */
export function entryRules(rules, field) {
  return (rules || []).find((rule) => rule.field === field && rule.rules)?.rules || [];
}

/* The lacks with a field of their own, nested ones flattened: [{path, field, name, rule}]. */
export function leaves(lacks) {
  return lacks.flatMap((lack) => (lack.lacks ? leaves(lack.lacks) : [lack]));
}

/* What ``unit`` lacks, in words (describe(lacking(…))): ["importance", "claim 1: text, category"]. */
export function lacksInWords(rules, unit, context = {}) {
  return describe(lacking(rules, unit, context));
}

/* The lacks in words: "stance of passage 1, 3", "your evidence 1: text, reliable", "factuality". */
export function describe(lacks) {
  const out = [];
  let last = null;
  for (const lack of lacks) {
    if (lack.lacks) out.push(`${lack.name} ${lack.index + 1}: ${describe(lack.lacks).join(", ")}`);
    else if (lack.index === undefined) out.push(lack.name);
    else if (last && last.rule === lack.rule) out[out.length - 1] += `, ${lack.index + 1}`;
    else out.push(`${lack.name} ${lack.index + 1}`);
    last = lack;
  }
  return out;
}
