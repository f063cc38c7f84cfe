import json
import re
import zlib

import numpy as np
import pytest

from pipeline.dfactscore import (
    link_groups,
    offline_groups,
    parse_fact_lines,
    parse_groups,
    preannotate,
    sentence_spans,
    split_page,
)
from pipeline.parsing import ParseError
from tests.helpers.fake_llm import FakeLLMServer, FakeReply, last_user_message

NAME = "Mara Quell"
RESPONSE = (
    "Mara Quell is an Estonian glassblower born in Tallinn in 1961. She won a bronze medal in rowing at the 1998 "
    "World Championships. Quell studied at the Estonian Academy of Arts. She now coaches a rowing club in Tartu."
)
ARTIST = {
    "title": "Mara Quell (artist)",
    "url": "https://example.org/artist",
    "text": "Mara Quell (born 1961 in Tallinn) is an Estonian glass artist and glassblower. She studied at the "
    "Estonian Academy of Arts and has exhibited her glass sculptures across Europe.",
}
ROWER = {
    "title": "Mara Quell (rower)",
    "url": "https://example.org/rower",
    "text": "Mara Quell (born 1975) is a retired Estonian rower. She won a bronze medal in the single sculls at "
    "the 1998 World Rowing Championships. She lives in Pärnu.",
}
OFFLINE = {"embeddings": False}


def test_parse_fact_lines_accepts_only_dash_lines():
    assert parse_fact_lines("```\n- A is a b.\n\n-  A lives in C. \n```") == [
        "A is a b.",
        "A lives in C.",
    ]
    for bad in (
        "",
        None,
        "Facts:\n- A is a b.",
        "- A is a b.\nA lives in C.",
        "1. A is a b.",
        "- ===",
    ):
        with pytest.raises(ParseError):
            parse_fact_lines(bad)


def test_parse_groups_needs_every_fact_exactly_once():
    facts = ["A is a painter.", "A plays football.", "A was born in Leeds."]
    answer = "- a is a  painter.\n- A was born in Leeds.\n- ===\n- ===\n- A plays football.\n"
    assert parse_groups(answer, facts) == [[0, 2], [1]]
    assert parse_groups("- A is a painter.\n- A plays football.\n- A was born in Leeds.", facts) == [[0, 1, 2]]
    assert parse_groups("- X.\n- X.\n- ===\n- Y.", ["X.", "Y.", "X."]) == [
        [0, 2],
        [1],
    ]  # duplicates in order
    bad_answers = [
        "- A is a painter.\n- A plays football.",  # one left out
        "- A is a painter.\n- A is a painter.\n- A plays football.\n- A was born in Leeds.",  # repeated
        "- A is a painter.\n- A plays football.\n- A was born in Leeds.\n- A sings.",  # invented
        "Group 1:\n- A is a painter.\n- A plays football.\n- A was born in Leeds.",  # prose
        "",
    ]
    for bad in bad_answers:
        with pytest.raises(ParseError):
            parse_groups(bad, facts)


def test_split_page_packs_sentences_into_about_100_words():
    sentence = "This sentence has exactly ten words in it, you see. "
    passages = split_page(sentence * 25)
    assert [len(p.split()) for p in passages] == [100, 100, 50]
    assert split_page("") == []


def test_sentence_spans_tolerate_changed_whitespace_and_list_markers():
    response = "Intro line:\n1. First  item here.\n2. Second item."
    spans = sentence_spans(response, ["Intro line:", "First item here.", "Second item.", "Not there."])
    assert [response[s[0] : s[1]] if s else None for s in spans] == [
        "Intro line:",
        "First  item here.",
        "Second item.",
        None,
    ]


def assert_shape(result: dict, facts: int, candidates: int) -> None:
    content, suggestion = result["content"], result["suggestion"]
    assert set(content) == {"name", "facts", "candidates"}
    assert len(content["facts"]) == facts and all(set(f) == {"text", "span"} for f in content["facts"])
    assert all(set(c) == {"title", "url", "text", "passages"} and c["passages"] for c in content["candidates"])
    assert set(suggestion) == {"groups", "links", "support", "labels", "provenance"}
    assert sorted(i for g in suggestion["groups"] for i in g) == list(range(facts))
    assert len(suggestion["links"]) == len(suggestion["groups"])
    assert all(link is None or 0 <= link < candidates for link in suggestion["links"])
    assert [[e["candidate"] for e in row] for row in suggestion["support"]] == [list(range(candidates))] * facts
    assert len(suggestion["labels"]) == facts
    json.dumps(result)  # plain JSON


def test_offline_groups_links_and_labels_a_merged_biography():
    result = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], OFFLINE)
    assert_shape(result, 4, 2)
    facts = [f["text"] for f in result["content"]["facts"]]
    assert facts == [
        "Mara Quell is an Estonian glassblower born in Tallinn in 1961.",
        "Mara Quell won a bronze medal in rowing at the 1998 World Championships.",
        "Quell studied at the Estonian Academy of Arts.",
        "Quell now coaches a rowing club in Tartu.",
    ]
    # Each fact's span is the sentence it came from (pronouns resolved in the fact, not in the text).
    assert [RESPONSE[slice(*f["span"])] for f in result["content"]["facts"]] == [
        "Mara Quell is an Estonian glassblower born in Tallinn in 1961.",
        "She won a bronze medal in rowing at the 1998 World Championships.",
        "Quell studied at the Estonian Academy of Arts.",
        "She now coaches a rowing club in Tartu.",
    ]
    suggestion = result["suggestion"]
    # The Tartu club is on no page: it joins the largest group (the artist's).
    assert suggestion["groups"] == [[0, 2, 3], [1]]
    assert suggestion["links"] == [0, 1]
    assert suggestion["labels"] == ["supported", "supported", "supported", "not_supported"]
    supported = [[e["supported"] for e in row] for row in suggestion["support"]]
    assert supported == [[True, False], [False, True], [True, False], [False, False]]
    assert suggestion["support"][0][0]["score"] == 1.0  # every content word of the fact is on the page
    assert suggestion["provenance"] == {
        "facts": "offline",
        "grouping": "offline",
        "support": "offline",
        "similarity": "lexical",
        "notes": [],
    }


def test_support_threshold_is_the_projects_setting():
    strict = preannotate(
        NAME,
        RESPONSE,
        None,
        [ARTIST, ROWER],
        {**OFFLINE, "dfactscore": {"support_threshold": 1.01}},
    )
    assert all(not e["supported"] for row in strict["suggestion"]["support"] for e in row)
    assert strict["suggestion"]["groups"] == [[0, 1, 2, 3]] and strict["suggestion"]["links"] == [None]
    assert strict["suggestion"]["labels"] == ["not_supported"] * 4


def test_imported_facts_are_kept_and_found_in_the_text():
    facts = [
        "Mara Quell won a bronze medal in rowing.",
        "Mara Quell studied at the Estonian Academy of Arts.",
        "The weather in Tartu is mild.",
    ]
    result = preannotate(NAME, RESPONSE, facts, [ARTIST, ROWER], OFFLINE)
    assert [f["text"] for f in result["content"]["facts"]] == facts
    spans = [f["span"] for f in result["content"]["facts"]]
    assert RESPONSE[slice(*spans[0])].startswith("She won a bronze medal")
    assert RESPONSE[slice(*spans[1])] == "Quell studied at the Estonian Academy of Arts."
    assert spans[2] is None
    assert result["suggestion"]["provenance"]["facts"] == "import"
    # Not about the name, no pronoun, on no page: the machine guesses irrelevant.
    assert result["suggestion"]["labels"] == ["supported", "supported", "irrelevant"]


def test_candidates_keep_given_passages():
    given = {**ARTIST, "passages": ["Mara Quell blows glass."]}
    result = preannotate(NAME, "Mara Quell blows glass.", ["Mara Quell blows glass."], [given], OFFLINE)
    assert result["content"]["candidates"][0]["passages"] == ["Mara Quell blows glass."]
    assert result["suggestion"]["support"] == [[{"candidate": 0, "score": 1.0, "supported": True}]]


def test_no_facts_and_no_candidates():
    empty = preannotate(NAME, "", None, [ARTIST], OFFLINE)
    assert empty["content"]["facts"] == [] and empty["suggestion"]["groups"] == []
    assert empty["suggestion"]["links"] == [] and empty["suggestion"]["labels"] == []
    alone = preannotate(NAME, RESPONSE, None, [], OFFLINE)
    assert alone["suggestion"]["groups"] == [[0, 1, 2, 3]] and alone["suggestion"]["links"] == [None]
    assert alone["suggestion"]["support"] == [[]] * 4
    assert alone["suggestion"]["labels"] == ["not_supported"] * 4


def _bag_of_words(texts):
    """A deterministic stand-in for the embedding model: hashed word counts, unit length."""
    vectors = np.zeros((len(texts), 64))
    for row, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            vectors[row, zlib.crc32(word.encode()) % 64] += 1
    return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9, None)


def test_embeddings_are_fused_with_word_containment_and_fall_back():
    fused = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], {}, embed=_bag_of_words)
    lexical = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], OFFLINE)
    assert fused["suggestion"]["provenance"]["similarity"] == "embeddings+lexical"
    cosine = _bag_of_words(
        [
            "the person is an Estonian glassblower born in Tallinn in 1961.",
            "the person (born 1961 in Tallinn) is an Estonian glass artist and glassblower. "
            "She studied at the Estonian Academy of Arts and has exhibited her glass sculptures "
            "across Europe.",
        ]
    )
    expected = 0.5 * 1.0 + 0.5 * float(cosine[0] @ cosine[1])
    assert fused["suggestion"]["support"][0][0]["score"] == pytest.approx(expected, abs=1e-4)

    def broken(texts):
        raise OSError("model files missing")

    fallback = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], {}, embed=broken)
    assert fallback["suggestion"]["support"] == lexical["suggestion"]["support"]
    assert fallback["suggestion"]["provenance"]["similarity"] == "lexical"
    assert fallback["suggestion"]["provenance"]["notes"] == ["embeddings unavailable: OSError: model files missing"]


def test_real_embeddings_separate_the_two_people():
    result = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], {})
    assert result["suggestion"]["provenance"]["similarity"] == "embeddings+lexical"
    assert result["suggestion"]["links"] == [0, 1]
    assert result["suggestion"]["labels"][:3] == ["supported"] * 3


def test_offline_grouping_anchors_and_the_largest_group():
    best = np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.2], [0.1, 0.1], [0.3, 0.6], [0.2, 0.9]])
    assert offline_groups(best, 0.5) == [[0, 2], [1, 3, 4, 5]]
    assert offline_groups(best, 0.95) == [[0, 1, 2, 3, 4, 5]]
    assert offline_groups(np.zeros((0, 2)), 0.5) == []


def _support(rows):
    return [[{"candidate": c, "score": s, "supported": s >= 0.5} for c, s in enumerate(row)] for row in rows]


def test_linking_argmax_ties_and_none():
    support = _support([[0.9, 0.6], [0.6, 0.95], [0.1, 0.2]])
    # Group [0, 1]: both candidates support both facts; candidate 1's scores sum higher.
    assert link_groups([[0, 1], [2]], support, 2) == [1, None]
    assert link_groups([[0], [1]], support, 2) == [0, 1]
    assert link_groups([[0, 1, 2]], _support([[0.1], [0.2], [0.3]]), 1) == [None]


def test_hungarian_linking_is_one_to_one():
    # Both groups are best supported by candidate 0; argmax links both to it.
    support = _support([[0.9, 0.1], [0.9, 0.6], [0.8, 0.7]])
    groups = [[0], [1, 2]]
    assert link_groups(groups, support, 2, "argmax") == [0, 0]
    assert link_groups(groups, support, 2, "hungarian") == [0, 1]
    # More groups than pages: the group left over has no link.
    assert link_groups([[0], [1], [2]], support, 2, "hungarian").count(None) == 1
    result = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], {**OFFLINE, "dfactscore": {"linking": "hungarian"}})
    assert result["suggestion"]["links"] == [0, 1]


# ---------------------------------------------------------------------------------------------
# LLM backends against the loopback server
# ---------------------------------------------------------------------------------------------

FACTS_BY_SENTENCE = {
    "Mara Quell is an Estonian glassblower born in Tallinn in 1961.": [
        "Mara Quell is Estonian.",
        "Mara Quell is a glassblower.",
        "Mara Quell was born in Tallinn.",
    ],
    "She won a bronze medal in rowing at the 1998 World Championships.": ["Mara Quell won a bronze medal in rowing."],
    "Quell studied at the Estonian Academy of Arts.": ["Mara Quell studied at the Estonian Academy of Arts."],
    "She now coaches a rowing club in Tartu.": ["Mara Quell coaches a rowing club in Tartu."],
}
SUPPORTED = {
    ("Mara Quell (artist)", "Mara Quell is Estonian."),
    ("Mara Quell (rower)", "Mara Quell is Estonian."),
    ("Mara Quell (artist)", "Mara Quell is a glassblower."),
    ("Mara Quell (artist)", "Mara Quell was born in Tallinn."),
    ("Mara Quell (rower)", "Mara Quell won a bronze medal in rowing."),
    ("Mara Quell (artist)", "Mara Quell studied at the Estonian Academy of Arts."),
}
GROUPS = [[0, 1, 2, 4], [3, 5]]


def responder(grouping=None, verdict=None, facts=None):
    """Answers the three prompts; each part may be replaced to misbehave."""

    def answer(request):
        prompt = last_user_message(request)
        if prompt.endswith("Output:"):
            topic = re.search(r"^Answer the question about (.*) based on", prompt).group(1)
            fact = re.search(r"Input: (.*) True or False\?\nOutput:$", prompt).group(1)
            return verdict(topic, fact) if verdict else ("True" if (topic, fact) in SUPPORTED else "False.")
        if prompt.endswith("Answer:\n"):
            listed = re.findall(r"^- (.*)$", prompt.split("\nFacts:\n", 1)[1], re.M)
            if grouping:
                return grouping(listed)
            return "\n- ===\n".join("\n".join(f"- {listed[i]}" for i in group) for group in GROUPS)
        sentence = prompt.rsplit("independent facts: ", 1)[1].strip()
        if facts:
            return facts(sentence)
        return "\n".join(f"- {f}" for f in FACTS_BY_SENTENCE[sentence])

    return answer


def llm_settings(server):
    return {
        "embeddings": False,
        "llm": {"base_url": server.base_url, "model": "fake-model", "max_retries": 0},
    }


def test_llm_backends_follow_the_papers_prompts():
    with FakeLLMServer(responder()) as server:
        result = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], llm_settings(server))
    assert_shape(result, 6, 2)
    facts = [f["text"] for f in result["content"]["facts"]]
    assert facts == [f for sentence in FACTS_BY_SENTENCE.values() for f in sentence]
    # A model's fact has the span of the sentence it was made from.
    assert [RESPONSE[slice(*f["span"])][:8] for f in result["content"]["facts"]] == [
        "Mara Que",
        "Mara Que",
        "Mara Que",
        "She won ",
        "Quell st",
        "She now ",
    ]
    suggestion = result["suggestion"]
    assert suggestion["groups"] == GROUPS
    assert [[e["supported"] for e in row] for row in suggestion["support"]] == [
        [(page["title"], fact) in SUPPORTED for page in (ARTIST, ROWER)] for fact in facts
    ]
    assert suggestion["links"] == [0, 1]
    assert suggestion["labels"] == ["supported"] * 5 + ["not_supported"]
    assert suggestion["provenance"] == {
        "facts": "llm:fake-model",
        "grouping": "llm:fake-model",
        "support": "llm:fake-model",
        "similarity": "lexical",
        "notes": [],
    }

    prompts = [last_user_message(r) for r in server.requests]
    assert len(prompts) == 4 + 1 + 6 * 2
    first = [
        p
        for p in prompts
        if p.endswith(
            "Please breakdown the following sentence into independent facts: "
            "Mara Quell is an Estonian glassblower born in Tallinn in 1961.\n"
        )
    ]
    assert len(first) == 1
    assert first[0].count("Please breakdown the following sentence into independent facts:") == 4  # 3 demos
    grouping = next(p for p in prompts if p.endswith("Answer:\n"))
    assert 'about "Mara Quell"' in grouping and "- ===" in grouping
    assert "\n".join(f"- {f}" for f in facts) in grouping
    verify = next(
        p
        for p in prompts
        if "Input: Mara Quell is a glassblower. True or False?" in p and "(artist)" in p.split("\n", 1)[0]
    )
    assert verify.startswith(
        "Answer the question about Mara Quell (artist) based on the given context.\n\n"
        "Title: Mara Quell (artist)\nText: Mara Quell (born 1961 in Tallinn)"
    )
    assert verify.endswith("\n\nInput: Mara Quell is a glassblower. True or False?\nOutput:")


def test_llm_misbehaviour_falls_back_part_by_part():
    def facts(sentence):
        return (
            "Here are the facts: Mara Quell rows."
            if sentence.startswith("She won")
            else "\n".join(f"- {f}" for f in FACTS_BY_SENTENCE[sentence])
        )

    def grouping(listed):
        return "\n".join(f"- {f}" for f in listed[1:])  # leaves the first fact out

    def verdict(topic, fact):
        return "Probably true, since the page says so." if "Tallinn" in fact else "False"

    with FakeLLMServer(responder(grouping=grouping, verdict=verdict, facts=facts)) as server:
        result = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], llm_settings(server))
    facts_out = [f["text"] for f in result["content"]["facts"]]
    # The unusable sentence gets the offline decomposition.
    assert facts_out[3] == "Mara Quell won a bronze medal in rowing at the 1998 World Championships."
    suggestion, notes = result["suggestion"], result["suggestion"]["provenance"]["notes"]
    assert suggestion["provenance"]["facts"] == "llm:fake-model"
    assert suggestion["provenance"]["grouping"] == "offline"
    assert any(n.startswith("facts of sentence 1: offline decomposition (unparseable answer") for n in notes)
    assert any(n.startswith("grouping: offline heuristic (facts left out: [0])") for n in notes)
    assert "support: 2 of 12 verdicts offline (similarity ≥ 0.5)" in notes
    tallinn = facts_out.index("Mara Quell was born in Tallinn.")
    # Unusable verdicts keep the offline one: "born in Tallinn" is on the artist's page only.
    assert [e["supported"] for e in suggestion["support"][tallinn]] == [True, False]
    assert [e["supported"] for row in suggestion["support"][:tallinn] for e in row] == [False] * (2 * tallinn)


def test_unreachable_model_falls_back_entirely():
    with FakeLLMServer(lambda request: FakeReply("down", status=500)) as server:
        result = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], llm_settings(server))
    offline = preannotate(NAME, RESPONSE, None, [ARTIST, ROWER], OFFLINE)
    assert result["content"] == offline["content"]
    for key in ("groups", "links", "support", "labels"):
        assert result["suggestion"][key] == offline["suggestion"][key]
    assert result["suggestion"]["provenance"]["grouping"] == "offline"
    assert len(result["suggestion"]["provenance"]["notes"]) == 4 + 1 + 2
