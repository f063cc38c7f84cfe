"""Step-2 pre-annotation end to end in plain Python: corpus search, ranking, stance hints."""

import numpy as np

from pipeline.factcheck_step2 import ClaimToCheck, suggest_step2
from pipeline.retrieval import Candidate, LexicalIndex
from tests.helpers.fake_llm import FakeLLMServer, last_user_message

CORPUS = [
    (
        "Eiffel Tower",
        "https://w.example/eiffel",
        "The Eiffel Tower was completed in March 1889 as the entrance arch to the World's Fair.",
    ),
    (
        "Eiffel Tower",
        "https://w.example/eiffel",
        "The tower is 330 metres tall and was the tallest man-made structure until 1930.",
    ),
    (
        "Marie Curie",
        "https://w.example/curie",
        "Marie Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.",
    ),
    (
        "Bananas",
        "https://w.example/banana",
        "Bananas are rich in potassium and grow in tropical regions.",
    ),
]
CLAIMS = [
    ClaimToCheck("sentence1/0", "The Eiffel Tower was completed in 1889."),
    ClaimToCheck("sentence2/0", "Marie Curie won two Nobel Prizes."),
]


def corpus_search():
    index = LexicalIndex([text for _, _, text in CORPUS])
    calls = []

    def search(query, vector, k):
        calls.append((query, vector is not None, k))
        return [
            Candidate(text=CORPUS[i][2], title=CORPUS[i][0], url=CORPUS[i][1], query=query, passage_id=i)
            for i, _ in index.search(query, k)
        ]

    return search, calls


def test_each_claim_gets_ranked_evidence_from_every_query_offline():
    search, calls = corpus_search()
    result = suggest_step2(CLAIMS, search=search)
    eiffel, curie = result["claims"]
    assert result["sources"] == ["corpus"]
    assert eiffel["key"] == "sentence1/0" and eiffel["queries"]["queries"] == [
        CLAIMS[0].text,
        "Eiffel Tower 1889",
    ]
    assert eiffel["evidence"][0]["text"].startswith("The Eiffel Tower was completed in March 1889")
    assert eiffel["evidence"][0]["rank"] == 1 and eiffel["evidence"][0]["title"] == "Eiffel Tower"
    assert all("Bananas" not in e["text"] for e in eiffel["evidence"])
    assert curie["evidence"][0]["url"] == "https://w.example/curie" and curie["problems"] == []
    assert "stance_hint" not in eiffel["evidence"][0]  # no model, no guess
    assert [q for q, _, _ in calls] == [
        CLAIMS[0].text,
        "Eiffel Tower 1889",
        CLAIMS[1].text,
        "Marie Curie Nobel Prizes",
    ]


def test_query_embeddings_are_passed_to_the_search_when_an_embedder_is_given():
    search, calls = corpus_search()
    seen = []

    def embed(texts):
        seen.append(list(texts))
        return np.ones((len(texts), 4), dtype=np.float32) / 2

    suggest_step2(CLAIMS, search=search, embed=embed)
    assert len(seen) == 1  # claims and queries in one batch
    assert all(has_vector for _, has_vector, _ in calls)


def test_without_any_source_the_claim_says_so():
    result = suggest_step2(CLAIMS[:1])
    assert result["claims"][0]["evidence"] == []
    assert "no evidence source is configured" in result["claims"][0]["problems"][0]


def test_with_a_model_claims_get_questions_and_stance_hints_asked_concurrently():
    def answer(request):
        message = last_user_message(request)
        if "Questions:" in message:
            return '["When was it completed?"]'
        return "completely-support" if "1889" in message.split("Evidence:")[-1] else "irrelevant"

    claims = [ClaimToCheck(f"sentence{i}/0", CLAIMS[i % 2].text) for i in range(5)]
    search, _ = corpus_search()
    with FakeLLMServer(answer, delay=0.05) as server:
        result = suggest_step2(claims, search=search, llm=server.config(concurrency=8))
    assert server.max_in_flight > 1
    first = result["claims"][0]
    assert first["queries"]["backend"] == "llm" and "When was it completed?" in first["queries"]["queries"]
    assert first["evidence"][0]["stance_hint"]["label"] == "completely-support"
    stance_calls = [r for r in server.requests if "Evidence:" in last_user_message(r)]
    assert len(stance_calls) == sum(len(c["evidence"]) for c in result["claims"])


def test_stance_calls_of_a_claim_start_while_the_next_claims_are_still_being_retrieved():
    import time

    search, _ = corpus_search()
    searches = []

    def slow_search(query, vector, k):
        searches.append(time.monotonic())
        time.sleep(0.05)
        return search(query, vector, k)

    stance_seen = []

    def answer(request):
        if "Evidence:" in last_user_message(request):
            stance_seen.append(time.monotonic())
            return "irrelevant"
        return '["q?"]'

    claims = [ClaimToCheck(f"sentence{i}/0", CLAIMS[i % 2].text) for i in range(4)]
    with FakeLLMServer(answer, delay=0.05) as server:
        result = suggest_step2(claims, search=slow_search, llm=server.config(concurrency=4))
    assert min(stance_seen) < max(searches)  # the first claim's hints were asked for before the last search
    assert all(e["stance_hint"]["label"] == "irrelevant" for c in result["claims"] for e in c["evidence"])


def test_a_search_that_takes_many_queries_gets_each_claims_queries_in_one_call():
    search, calls = corpus_search()
    batches = []

    def many(queries, vectors, k):
        batches.append(list(queries))
        return [search(q, None if vectors is None else vectors[n], k) for n, q in enumerate(queries)]

    search.many = many
    result = suggest_step2(CLAIMS, search=search)
    assert batches == [
        [CLAIMS[0].text, "Eiffel Tower 1889"],
        [CLAIMS[1].text, "Marie Curie Nobel Prizes"],
    ]
    assert result["claims"][0]["evidence"][0]["text"].startswith("The Eiffel Tower was completed")


def test_claims_are_searched_while_the_model_writes_their_questions_and_calls_stay_within_the_concurrency():
    import threading
    import time

    search, _ = corpus_search()
    searched = []
    asked = []
    lock = threading.Lock()

    def timed_search(query, vector, k):
        searched.append((query, time.monotonic()))
        return search(query, vector, k)

    def answer(request):
        message = last_user_message(request)
        if "Questions:" in message:
            with lock:
                asked.append(time.monotonic())
            return '["When was it completed?"]'
        return "irrelevant"

    claims = [ClaimToCheck(f"sentence{i}/0", f"{CLAIMS[i % 2].text[:-1]} ({i}).") for i in range(5)]
    delay = 0.3
    with FakeLLMServer(answer, delay=delay) as server:
        result = suggest_step2(claims, search=timed_search, llm=server.config(concurrency=3))
    claim_searches = [t for q, t in searched if q in {c.text for c in claims}]
    question_searches = [t for q, t in searched if q == "When was it completed?"]
    assert len(claim_searches) == 5 and len(question_searches) == 5
    # Every claim was searched before the first questions could have come back.
    assert max(claim_searches) < min(asked) + delay <= min(question_searches)
    assert server.max_in_flight <= 3  # question and stance calls share one pool of llm.concurrency
    assert all(e["stance_hint"]["label"] == "irrelevant" for c in result["claims"] for e in c["evidence"])
    assert [c["key"] for c in result["claims"]] == [c.key for c in claims]  # in the claims' order


def test_a_claim_whose_questions_are_in_is_retrieved_before_the_other_claims_are_searched():
    """Searching slower than the model answers: claim 0's questions are searched (and its stance
    calls start) before claims 2 and 3 are searched at all, instead of after every claim's first query."""
    import re
    import time

    search, _ = corpus_search()
    order = []

    def slow_search(query, vector, k):
        order.append(query)
        time.sleep(0.3)  # longer than the model takes, with the client's first connection
        return search(query, vector, k)

    def answer(request):
        message = last_user_message(request)
        if "Questions:" in message:
            number = re.findall(r"\((\d)\)", message.split("Statement:")[-1])[0]
            return f'["Question {number}?"]'
        return "irrelevant"

    claims = [ClaimToCheck(f"sentence{i}/0", f"{CLAIMS[i % 2].text[:-1]} ({i}).") for i in range(4)]
    with FakeLLMServer(answer, delay=0.01) as server:
        result = suggest_step2(claims, search=slow_search, llm=server.config(concurrency=4))
    assert order.index("Question 0?") < order.index(claims[2].text)
    assert order == [
        claims[0].text,
        "Question 0?",
        claims[1].text,
        "Question 1?",
        claims[2].text,
        "Question 2?",
        claims[3].text,
        "Question 3?",
    ]
    assert [c["queries"]["queries"] for c in result["claims"]] == [
        [c.text, f"Question {i}?"] for i, c in enumerate(claims)
    ]
