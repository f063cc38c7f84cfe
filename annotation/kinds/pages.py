"""The shapes of what an annotation page is handed about its kind and step. Each kind's
``page.py`` (annotation/kinds/<key>/page.py) holds, per step, the label lists ([value, text],
values from the kind's own vocabularies), the rules the page checks before a submit
(``completeness``, applied by static/js/completeness.js) and the keys of the required fields;
the registry (annotation/kinds/__init__.py) hands them out as ``page_rules`` and ``page_keys``.
The page scripts hold layout only: every label a page shows, every completeness rule and every
key of a required field comes from there.

The keys of a step (``KEYS[step]``): by the field's path with list indexes as [], every field
the completeness rules require, so it can be reached from the keyboard. A list holds one key per
entry of the field's label list (``choices``), in the list's order: the page binds those keys
and shows them in its hints and legend (static/js/keys.js), so the two never differ. A text says
how the field is reached."""


def labelled(values, texts) -> list[list]:
    """[[value, text], ...]; the texts must name every value of the vocabulary, in its order."""
    return [[value, text] for value, text in zip(values, texts, strict=True)]


YES_NO = ((True, False), ("Yes", "No"))


def rule(field: str, name: str, **more) -> dict:
    """One completeness rule (the shape static/js/completeness.js documents): ``field`` must be
    filled, ``name`` is what the page calls it."""
    return {"field": field, "name": name, **more}
