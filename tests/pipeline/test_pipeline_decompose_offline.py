import pytest

from pipeline.decompose import (
    OFFLINE,
    decompose_response,
    decontextualise,
    split_claims,
)
from pipeline.llm import LLMConfig


def test_leading_he_resolves_to_the_person_named_after_is():
    sentences = [
        "The first person to walk on the Moon was Neil Armstrong.",
        "He was born in Ohio in 1930.",
        "His parents were Stephen and Viola Armstrong.",
    ]
    assert decontextualise(sentences)[1:] == [
        "Neil Armstrong was born in Ohio in 1930.",
        "Neil Armstrong's parents were Stephen and Viola Armstrong.",
    ]


def test_pronoun_chain_keeps_the_subject_and_it_resolves_to_the_topic():
    sentences = [
        "Marie Curie was a physicist.",
        "She won two Nobel Prizes.",
        "She died in 1934.",
        "The Danube flows into the Black Sea.",
        "It is the second-longest river in Europe.",
        "Its source is in the Black Forest.",
    ]
    assert decontextualise(sentences)[1:] == [
        "Marie Curie won two Nobel Prizes.",
        "Marie Curie died in 1934.",
        "The Danube flows into the Black Sea.",
        "The Danube is the second-longest river in Europe.",
        "The Danube's source is in the Black Forest.",
    ]


@pytest.mark.parametrize(
    "sentence",
    [
        "It is difficult to say how many stars form each year.",
        "This idea suggests that the river is old.",
        "These waves are ripples in space-time.",
        "This is the end of the list.",
    ],
)
def test_expletive_it_and_determiner_this_are_left_alone(sentence):
    assert decontextualise(["The Danube flows into the Black Sea.", sentence])[1] == sentence


def test_pronoun_without_antecedent_is_left_alone():
    assert decontextualise(["He was born in 1930."]) == ["He was born in 1930."]


def test_coordinated_clauses_with_their_own_subjects_are_split():
    assert split_claims("The merger of two black holes is rare, and it takes millions of years to happen.") == [
        "The merger of two black holes is rare.",
        "It takes millions of years to happen.",
    ]
    assert split_claims("Earth and Mars have solid surfaces, whereas Jupiter and Saturn are gas giants.") == [
        "Earth and Mars have solid surfaces.",
        "Jupiter and Saturn are gas giants.",
    ]


def test_coordinated_predicates_share_the_subject():
    assert split_claims("Neil Armstrong was born in Ohio in 1930, and served in the US Navy until 1952.") == [
        "Neil Armstrong was born in Ohio in 1930.",
        "Neil Armstrong served in the US Navy until 1952.",
    ]
    assert split_claims(
        "In 1969, Neil Armstrong was the mission commander and would become the first man on the Moon."
    ) == [
        "In 1969, Neil Armstrong was the mission commander.",
        "Neil Armstrong would become the first man on the Moon.",
    ]


def test_semicolons_split_clauses():
    assert split_claims("The museum opened in 1793; it is the most visited museum in the world.") == [
        "The museum opened in 1793.",
        "It is the most visited museum in the world.",
    ]


def test_enumerations_give_one_claim_per_element():
    assert split_claims("The Danube flows through countries such as Austria, Hungary, and Romania.") == [
        "The Danube flows through countries such as Austria.",
        "The Danube flows through countries such as Hungary.",
        "The Danube flows through countries such as Romania.",
    ]
    assert split_claims("Top producers include California, South Carolina and New Jersey.") == [
        "Top producers include California.",
        "Top producers include South Carolina.",
        "Top producers include New Jersey.",
    ]


@pytest.mark.parametrize(
    "sentence",
    [
        "He was born to a mother from Kansas and a father from Kenya.",
        "Earth, Jupiter, and Mars are planets.",
        "The recipe needs flour and baked apples.",
        "The law includes requiring a licence and limiting the reasons for which guns could be carried.",
        "The company was founded in 1990 in Berlin.",
    ],
)
def test_sentences_the_rules_do_not_recognise_stay_one_claim(sentence):
    assert split_claims(sentence) == [sentence]


def test_claims_are_capitalised_and_punctuated():
    assert split_claims("the tower is tall, but the bridge is short") == [
        "The tower is tall.",
        "The bridge is short.",
    ]


@pytest.mark.parametrize("config", [None, LLMConfig(), LLMConfig(base_url="http://127.0.0.1:9/v1")])
def test_decompose_response_is_offline_without_a_configured_llm(config):
    results = decompose_response(
        ["Marie Curie was a physicist.", "She was born in Warsaw and moved to Paris in 1891."],
        config,
    )
    assert [r.to_dict() for r in results] == [
        {
            "sentence": "Marie Curie was a physicist.",
            "decontext": "Marie Curie was a physicist.",
            "claims": ["Marie Curie was a physicist."],
            "backend": OFFLINE,
            "model": None,
            "fallback": False,
            "error": None,
        },
        {
            "sentence": "She was born in Warsaw and moved to Paris in 1891.",
            "decontext": "Marie Curie was born in Warsaw and moved to Paris in 1891.",
            "claims": ["Marie Curie was born in Warsaw.", "Marie Curie moved to Paris in 1891."],
            "backend": OFFLINE,
            "model": None,
            "fallback": False,
            "error": None,
        },
    ]


def test_decompose_response_of_nothing_is_nothing():
    assert decompose_response([], None) == []


def test_pronoun_after_an_introductory_phrase_is_resolved():
    sentences = [
        "Marcus Morton was born in 1784.",
        "As a politician, he served as Governor of Massachusetts.",
    ]
    assert decontextualise(sentences)[1] == "As a politician, Marcus Morton served as Governor of Massachusetts."
