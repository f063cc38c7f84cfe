"""The dfactscore kind tests' data: one model's run over three generations in the released result
shape (Mara Quell, an abstention, Ivo Brandt), the import lines built from it, the project they
import into, builders of payloads, and released runs whose plain and grouped lists hold different
atoms (as every released file's do)."""

import numpy as np

from .builders import project_with_team

ARTIST = {
    "title": "Mara Quell (artist)",
    "url": "https://example.org/mara-artist",
    "text": "Mara Quell is an Estonian glassblower. She was born in Tallinn in 1971.",
}
ROWER = {
    "title": "Mara Quell (rower)",
    "url": "https://example.org/mara-rower",
    "text": "Mara Quell is a rower. She won a bronze medal in 1998.",
}
IVO = {
    "title": "Ivo Brandt",
    "url": "https://example.org/ivo",
    "text": "Ivo Brandt is a Danish cartographer.",
}
MARA_FACTS = [
    "Mara Quell is a glassblower.",
    "Mara Quell was born in Tallinn.",
    "Mara Quell won a rowing medal in 1998.",
    "Mara Quell coaches a rowing club in Tartu.",
]
MARA_RESPONSE = (
    "Mara Quell is a glassblower born in Tallinn. She won a rowing medal in 1998 and coaches a rowing club in Tartu."
)


def entry(atom, supported, topic=None):
    return {"atom": atom, "is_supported": supported, "supporting_topic": topic}


# A run of one model over three generations in the released result shape (the second abstained).
DECISIONS = [
    [
        entry(MARA_FACTS[0], True, ARTIST["title"]),
        entry(MARA_FACTS[1], True, ARTIST["title"]),
        entry(MARA_FACTS[2], True, ROWER["title"]),
        entry(MARA_FACTS[3], False),
    ],
    None,
    [
        entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
        entry("Ivo Brandt mapped the Faroe coast.", False),
    ],
]
GLOBAL_DECISIONS = [
    [
        entry(MARA_FACTS[0], True, ARTIST["title"]),
        entry(MARA_FACTS[1], True, ARTIST["title"]),
        entry(MARA_FACTS[2], False),
        entry(MARA_FACTS[3], False),
    ],
    None,
    [
        entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
        entry("Ivo Brandt mapped the Faroe coast.", False),
    ],
]
GENERATIONS = [
    {
        "prompt": "Tell me a bio of Mara Quell.",
        "name": "Mara Quell",
        "response": MARA_RESPONSE,
        "candidates": [ARTIST, ROWER],
        "model": "m1",
    },
    {
        "prompt": "Tell me a bio of Nils Varg.",
        "name": "Nils Varg",
        "response": "I do not know who that is.",
        "candidates": [],
        "model": "m1",
    },
    {
        "prompt": "Tell me a bio of Ivo Brandt.",
        "name": "Ivo Brandt",
        "response": "Ivo Brandt is a cartographer who mapped the Faroe coast.",
        "candidates": [IVO],
        "model": "m1",
    },
]


def result_lines():
    return [{**g, "decisions": d, "global_decisions": gd} for g, d, gd in zip(GENERATIONS, DECISIONS, GLOBAL_DECISIONS)]


def mara_line(**extra):
    return {
        "prompt": "Tell me a bio of Mara Quell.",
        "name": "Mara Quell",
        "response": MARA_RESPONSE,
        "atomic_facts": MARA_FACTS,
        "candidates": [ARTIST, ROWER],
        "model": "m1",
        **extra,
    }


def dfactscore_project(users):
    """A dfactscore project with alice and bob annotating and carol consolidating."""
    project = project_with_team(users, "D-FActScore test", "dfactscore")
    project.pipeline_settings = {"embeddings": False}  # offline lexical similarity: no model download
    project.save()
    return project


def content_of(count=4, pages=2, **passes):
    return {
        "name": "Mara Quell",
        "facts": [{"text": f"fact {i}", "span": None} for i in range(count)],
        "candidates": [
            {"title": f"p{i}", "url": "https://example.org", "text": "t", "passages": ["t"]} for i in range(pages)
        ],
        "passes": passes,
    }


def fact(group=None, label=None, any_page=None, entity=None):
    return {"group": group, "label": label, "any_page": any_page, "entity": entity}


def payload(individuals, links, facts):
    return {
        "individuals": individuals,
        "groups": [{"link": link} for link in links],
        "facts": facts,
    }


def complete_payload():
    return payload(
        2,
        [0, "none"],
        [
            fact(0, "supported"),
            fact(0, "not_supported"),
            fact(1, "irrelevant"),
            fact(1, "not_supported"),
        ],
    )


# -- released runs whose two lists hold different atoms ----------------------------------------------

# The authors' splitter rewrites and drops atoms, so a release's grouped list never holds the same
# facts as its plain one (in the ChatGPT file no generation's two lists have the same length). Here
# the plain list judges a Riga fact the grouped one lacks, the grouped one a club fact the plain
# one lacks: FActScore over the grouped list's facts is not the release's.
RIGA = "Mara Quell studied in Riga."
CLUB = "Mara Quell rows for a club."
SPLIT_DECISIONS = [
    [*DECISIONS[0], entry(RIGA, True, ARTIST["title"])],
    None,
    DECISIONS[2],
]
SPLIT_GLOBAL_DECISIONS = [
    [*GLOBAL_DECISIONS[0][:3], entry(CLUB, False)],
    None,
    GLOBAL_DECISIONS[2],
]


def release_mean(lists: list) -> float:
    """The release's init_score / init_global_score as the authors' code computes it: numpy's
    mean, over generations with facts, of the mean of their is_supported."""
    return float(np.mean([np.mean([e["is_supported"] for e in entries]) for entries in lists if entries is not None]))


def released_run(model: str, decisions: list, global_decisions: list) -> dict:
    """A result file of one model in the released shape, its figures computed as the code does."""
    return {
        "model": model,
        "decisions": decisions,
        "global_decisions": global_decisions,
        "init_score": release_mean(decisions),
        "init_global_score": release_mean(global_decisions),
    }


def released_run_lines(run: dict, prefix: str) -> list[dict]:
    """The run's import lines (as ``dfactscore_lines`` joins them), each with an id."""
    return [
        {**generation, "id": f"{prefix}{number}", "model": run["model"], "decisions": d, "global_decisions": gd}
        for number, (generation, d, gd) in enumerate(zip(GENERATIONS, run["decisions"], run["global_decisions"]))
    ]


def release_as_predictions(lines: list[dict]) -> list[dict]:
    """The release's own decisions as a system's predictions file: each entry of ``decisions``
    predicts ``supported`` and each of ``global_decisions`` ``global_supported``, keyed by its
    position in its list."""
    predictions = []
    for line in lines:
        for key, field in (("decisions", "supported"), ("global_decisions", "global_supported")):
            for position, decision in enumerate(line[key] or []):
                predictions.append({"item": line["id"], "fact": position, field: decision["is_supported"]})
    return predictions
