"""Reading a system's predictions file: JSONL keyed like the exports, read as imports read
files (annotation.imports.reading), each line checked against the project's scoring tasks and
gold units; every bad line is reported with its line, field and reason."""

import json
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from annotation.imports.reading import Reading, jsonl_records, line_error
from annotation.research import scoring

MAX_REPORTED_ERRORS = 200


UNIT_NOUNS = {
    "item": "item with a gold record",
    "sentence": "sentence",
    "claim": "claim",
    "evidence": "evidence passage",
    "segment": "segment",
    "fact": "fact",
}
# The unit ids of an agreement-export line, in key order after the item.


@dataclass
class Predictions:
    """The predictions of a file per task (unit key → label), or the errors that refuse it."""

    by_task: dict[str, dict[tuple, object]] = field(default_factory=dict)
    errors: list[dict] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    lines: int = 0


def _key_text(key_fields: Iterable[str], values: Iterable) -> str:
    return " ".join(_value_text(name, value) for name, value in zip(key_fields, values))


def _value_text(name: str, value) -> str:
    if isinstance(value, tuple):  # an item of a domain
        return f"{name} {value[1]!r} of domain {value[0]!r}"
    return f"{name} {value!r}" if isinstance(value, str) else f"{name} {value}"


def _label_text(value) -> str:
    return json.dumps(value, ensure_ascii=False)[:80]


def _refused_label(tasks: list[scoring.Task], name: str, value) -> str:
    if any(task.measure == "revision" for task in tasks):
        return f"must be a string (the revised text), not {_label_text(value)}"
    vocabulary = dict.fromkeys(label for task in tasks for label in task.vocabulary)
    return f"{_label_text(value)} is not a label of {name}: one of {', '.join(_label_text(v) for v in vocabulary)}"


class _Reader:
    """Checks lines against the project's tasks: their key fields, units and vocabularies, and
    the units that exist (``known``: see scoring.existing_units; the tasks' units always count)."""

    def __init__(self, tasks: Mapping[str, scoring.Task], known: set[tuple] = frozenset(), domain: str = ""):
        self.tasks = tasks
        self.domain = domain  # the upload's option: the domain of lines that name none
        self.key_names: list[str] = []
        for task in tasks.values():
            self.key_names += [name for name in task.key_fields if name not in self.key_names]
        # tasks by their set of key fields, each set in the order its tasks give
        self.by_keys: dict[frozenset, list[scoring.Task]] = defaultdict(list)
        for task in tasks.values():
            self.by_keys[frozenset(task.key_fields)].append(task)
        self.fields_of_keys = {
            keys: list(dict.fromkeys(t.field for t in group)) for keys, group in self.by_keys.items()
        }
        self.keys_of_field: dict[str, list[tuple]] = defaultdict(list)
        for group in self.by_keys.values():
            for task in group:
                if task.key_fields not in self.keys_of_field[task.field]:
                    self.keys_of_field[task.field].append(task.key_fields)
        self.units = {name: {u.key for u in task.units} for name, task in tasks.items()}
        self.known = set(known).union(*self.units.values())
        # every prefix of every unit: names the level a bad key fails at
        self.prefixes = {key[:depth] for key in self.known for depth in range(1, len(key) + 1)}
        # each item name → {its domain ("" for none): its key}; names repeat across domains
        self.items: dict[str, dict[str, Hashable]] = defaultdict(dict)
        for key in self.known:
            domain, name = scoring.named_item(key[0])
            self.items[name][domain] = key[0]
        self.value_types: dict[str, type] = {"item": str}  # a name; an item with a domain is resolved by it
        for task in tasks.values():
            for unit in task.units[:1]:
                for name, value in zip(task.key_fields, unit.key):
                    self.value_types.setdefault(name, type(value))
        for name in (
            "claim",
            "evidence",
            "segment",
            "fact",
        ):  # indexes, even before any gold unit exists
            self.value_types.setdefault(name, int)
        self.seen: dict[tuple, int] = {}

    def _signatures(self) -> str:
        return "; ".join(
            f"({', '.join(group[0].key_fields)}) for {', '.join(self.fields_of_keys[keys])}"
            for keys, group in self.by_keys.items()
        )

    def _no_task(self, number: int, present: list[str], data: dict) -> dict:
        """Why a line's key fields fit no task: the one its label fields point to, if any."""
        if not self.by_keys:
            return line_error(number, "(line)", "this project's kind has no scoring tasks")
        meant = [keys for keys, fields in self.fields_of_keys.items() if any(f in data for f in fields)]
        if len(meant) == 1:
            order = self.by_keys[meant[0]][0].key_fields
            missing = [name for name in order if name not in present]
            extra = [name for name in present if name not in meant[0]]
            fields = ", ".join(f for f in self.fields_of_keys[meant[0]] if f in data)
            if missing:
                return line_error(
                    number,
                    missing[0],
                    f"is missing: {fields} is predicted per ({', '.join(order)})",
                )
            return line_error(
                number,
                extra[0],
                f"is not a key of {fields}, which is predicted per ({', '.join(order)})",
            )
        given = f"({', '.join(present)})" if present else "no key fields"
        return line_error(
            number,
            "(keys)",
            f"{given} match no task of this project; lines are keyed {self._signatures()}",
        )

    def _key_value(self, number: int, name: str, value) -> tuple[object, dict | None]:
        wanted = self.value_types.get(name, str)
        if wanted is str and isinstance(value, int) and not isinstance(value, bool) and name == "item":
            return str(value), None  # FELM's released ids are numbers; the exports write strings
        if wanted is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            return None, line_error(
                number,
                name,
                f"must be a whole number from 0 (an index as the exports give it), not {_label_text(value)}",
            )
        if wanted is str and not isinstance(value, str):
            return None, line_error(
                number,
                name,
                f"must be a string (the id as the exports give it), not {_label_text(value)}",
            )
        return value, None

    def read(self, number: int, data) -> tuple[list[tuple[str, tuple, object]], list[dict]]:
        """The (task, key, label) predictions of one line, or its errors."""
        if not isinstance(data, dict):
            return [], [
                line_error(
                    number,
                    "(line)",
                    "must be a JSON object with the unit's ids and the predicted labels",
                )
            ]
        domain = data.pop("domain", None)
        present = [name for name in self.key_names if name in data]
        group = self.by_keys.get(frozenset(present))
        if group is None:
            return [], [self._no_task(number, present, data)]
        order = group[0].key_fields
        errors: list[dict] = []
        values = []
        for name in order:
            value, error = self._key_value(number, name, data[name])
            values.append(value)
            if error:
                errors.append(error)
        fields = self.fields_of_keys[frozenset(present)]
        labels = {}
        for name, value in data.items():
            if name in present:
                continue
            if name in fields:
                labels[name] = value
            elif name in self.keys_of_field:
                keyed = " or ".join(f"({', '.join(k)})" for k in self.keys_of_field[name])
                errors.append(
                    line_error(
                        number,
                        name,
                        f"is not predicted per ({', '.join(order)}): {name} is keyed {keyed}",
                    )
                )
            else:
                errors.append(
                    line_error(
                        number,
                        name,
                        f"is not a prediction field of this project: lines keyed "
                        f"({', '.join(order)}) carry {', '.join(fields)}",
                    )
                )
        if not labels and not errors:
            errors.append(
                line_error(
                    number,
                    "(line)",
                    f"has no prediction: lines keyed ({', '.join(order)}) carry {', '.join(fields)}",
                )
            )
        for name, value in labels.items():
            taking = [task for task in group if task.field == name]
            if not any(task.accepts(value) for task in taking):
                errors.append(line_error(number, name, _refused_label(taking, name, value)))
            elif isinstance(value, str) and "\x00" in value:  # PostgreSQL cannot store it
                errors.append(line_error(number, name, "contains the NUL character (U+0000), which cannot be stored"))
        if not errors and "item" in order:
            at = order.index("item")
            values[at], error = self._item(number, values[at], domain)
            if error:
                errors.append(error)
        if errors:
            return [], errors
        keys = {task.name: tuple(values[order.index(name)] for name in task.key_fields) for task in group}
        if not any(keys[task.name] in self.known for task in group):
            return [], [self._unknown_key(number, order, values)]
        found = []
        for name, value in labels.items():
            taking = [task for task in group if task.field == name]
            seen_at = self.seen.get((name, *values))
            if seen_at is not None:
                noun = UNIT_NOUNS.get(order[-1], order[-1])
                errors.append(
                    line_error(
                        number,
                        name,
                        f"predicts {name} of the same {noun} as line {seen_at}: {_key_text(order, values)}",
                    )
                )
                continue
            self.seen[(name, *values)] = number
            for task in taking:
                found.append((task.name, keys[task.name], value))
        return (found, []) if not errors else ([], errors)

    def _item(self, number: int, name: str, domain) -> tuple[Hashable, dict | None]:
        """The key of the item a line names by ``item`` and, where names repeat, ``domain`` (the
        line's, else the upload's option); a name that matches no item is left to _unknown_key."""
        given = domain is not None
        if not given:
            domain = self.domain
        if given and (not isinstance(domain, str) or not domain):
            return None, line_error(number, "domain", f"must be a domain's name, not {_label_text(domain)}")
        found = self.items.get(name)
        if not found:
            return name, None
        if domain:
            if domain in found:
                return found[domain], None
            return None, line_error(
                number, "domain", f"{domain!r} has no item {name!r}; the project has it {_domains_text(found)}"
            )
        if len(found) == 1:
            return next(iter(found.values())), None
        return None, line_error(
            number,
            "domain",
            f"is missing: the project has {len(found)} items {name!r} ({_domains_text(found)}); add "
            f'"domain" to the line, or give the upload a domain when the whole file is of one',
        )

    def _unknown_key(self, number: int, order: tuple, values: list) -> dict:
        depth = next(
            (d for d in range(1, len(values) + 1) if tuple(values[:d]) not in self.prefixes),
            len(values),
        )
        level = order[depth - 1]
        return line_error(
            number,
            level,
            f"{_key_text(order[:depth], values[:depth])} matches no {UNIT_NOUNS.get(level, level)} of the project",
        )


def _domains_text(found: Mapping[str, Hashable]) -> str:
    return ", ".join(f"in domain {d!r}" if d else "without a domain" for d in sorted(found))


def read_predictions(
    tasks: Mapping[str, scoring.Task],
    lines: Iterable[bytes | str],
    on_line: Callable[[int], None] | None = None,
    known: set[tuple] = frozenset(),
    domain: str = "",
) -> Predictions:
    """Every line of a predictions file checked against the project's tasks (see _Reader) and
    the units that exist (``known``, see scoring.existing_units). Items are named by ``item``
    and, where the project has the same name in several domains, ``domain``: the line's, else
    the upload's ``domain`` option.

    Errors are collected up to MAX_REPORTED_ERRORS (then reading stops); a prediction for a
    unit that has no gold label of a task (e.g. the factuality of a claim nobody verified) is
    counted in ``ignored``, not refused, as long as the unit exists."""
    reader = _Reader(tasks, known, domain)
    result = Predictions(by_task={name: {} for name in tasks})
    domains = {d for found in reader.items.values() for d in found if d}
    if domain and domain not in domains:
        named = ", ".join(repr(d) for d in sorted(domains)) or "none"
        result.errors.append(
            line_error(0, "domain", f"the project has no item in domain {domain!r} (its domains: {named})")
        )
        return result
    reading = Reading()
    records = 0
    for number, data, error in jsonl_records(lines, reading):
        result.lines, records = number, records + 1
        if on_line is not None:
            on_line(number)
        found, errors = ([], [error]) if error is not None else reader.read(number, data)
        result.errors += errors
        if len(result.errors) >= MAX_REPORTED_ERRORS:
            result.errors = result.errors[:MAX_REPORTED_ERRORS]
            result.errors.append(line_error(0, "(file)", f"reading stopped after {MAX_REPORTED_ERRORS} errors"))
            break
        for task_name, key, label in found:
            if key in reader.units[task_name]:
                result.by_task[task_name][key] = label
            else:
                result.ignored[task_name] += 1
    result.lines = max(result.lines, reading.lines)
    if not result.errors and not any(result.by_task.values()):
        result.errors.append(
            line_error(
                0,
                "(file)",
                "contains no predictions for a unit with a gold label" if records else "contains no predictions",
            )
        )
    return result


# -- what a run stores ----------------------------------------------------------------------------


def stored_form(by_task: Mapping[str, Mapping[tuple, object]]) -> dict[str, list[list]]:
    """{task: [[*key, label], ...]}: what SystemRun.predictions holds."""
    return {
        name: [[*key, label] for key, label in predictions.items()]
        for name, predictions in by_task.items()
        if predictions
    }


def from_stored(stored: Mapping[str, list[list]]) -> dict[str, dict[tuple, object]]:
    # JSON gives an item keyed (domain, name) back as a list
    return {
        name: {tuple(tuple(v) if isinstance(v, list) else v for v in row[:-1]): row[-1] for row in rows}
        for name, rows in (stored or {}).items()
    }
