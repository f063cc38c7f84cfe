"""Every versioned write under real concurrent requests, on PostgreSQL.

Each round sends several requests for the same object at the same moment (threads released by
one barrier, on connections opened beforehand) to the live server, where every request has its
own database connection, so the row locks and version checks meet for real. Whatever the
timing, exactly one request of a round wins, the others are told why (409 with the stored
version, or 400), and what is stored is the winner's.
"""

import json
from collections import Counter

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import (
    Annotation,
    Assignment,
    Consolidation,
    ConsolidationStatus,
    GoldRecord,
    StageStatus,
)
from annotation.services.annotations import save_annotation
from tests.helpers.builders import felm_line, jsonl, segment
from tests.helpers.factcheck import CS, IR, content, passage
from tests.helpers.factcheck import answer as full_answer
from tests.helpers.factcheck import rated_answer as answer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres_only("row-lock races are tested on PostgreSQL"),
]

CLIENTS = 4
ITEMS = 16
ALL_CORRECT = {"segments": [segment(True)] * 3}


@pytest.fixture
def many_items(felm_project):
    import_jsonl(
        felm_project,
        jsonl([felm_line(i, [f"Sentence {i}.{k} is a claim." for k in range(3)]) for i in range(ITEMS)]),
        fmt="felm",
    )
    return list(felm_project.items.order_by("id"))


def assignment_of(user, item) -> Assignment:
    return Assignment.objects.get(user=user, item_stage__item=item)


def annotated(label_comment: str) -> dict:
    return {"segments": [segment(True, comment=label_comment)] + [segment(True)] * 2}


def one_winner(answers, loser_status: int) -> int:
    statuses = Counter(status for status, _ in answers)
    assert statuses == Counter({200: 1, loser_status: len(answers) - 1}), answers
    return next(i for i, (status, _) in enumerate(answers) if status == 200)


def test_saves_with_the_same_version_exactly_one_wins(racer, many_items, users):
    assignment = assignment_of(users["alice"], many_items[0])
    version = save_annotation(assignment=assignment, payload=ALL_CORRECT, version=0, submit=False).version
    url = f"/api/assignments/{assignment.id}/annotation/"
    rounds = 30
    for round_ in range(rounds):
        bodies = [
            {"payload": annotated(f"round {round_} tab {i}"), "version": version, "submit": False}
            for i in range(CLIENTS)
        ]
        answers = racer.race([(users["alice"], "PUT", url, body) for body in bodies])
        winner = one_winner(answers, 409)
        assert all(answer["stored_version"] == version + 1 for status, answer in answers if status == 409)
        stored = Annotation.objects.get(assignment=assignment)
        assert stored.version == version + 1
        assert stored.payload["segments"][0]["comment"] == f"round {round_} tab {winner}"
        version += 1
    assert version == 1 + rounds


def test_first_saves_at_once_exactly_one_wins_and_none_fails(racer, many_items, users):
    for item in many_items:
        assignment = assignment_of(users["bob"], item)
        url = f"/api/assignments/{assignment.id}/annotation/"
        bodies = [{"payload": annotated(f"tab {i}"), "version": 0, "submit": False} for i in range(CLIENTS)]
        answers = racer.race([(users["bob"], "PUT", url, body) for body in bodies])
        winner = one_winner(answers, 409)
        assert all(answer["stored_version"] == 1 for status, answer in answers if status == 409)
        stored = Annotation.objects.get(assignment=assignment)
        assert (stored.version, stored.payload["segments"][0]["comment"]) == (1, f"tab {winner}")


def submit_both(users, item) -> Consolidation:
    for name in ("alice", "bob"):
        save_annotation(assignment=assignment_of(users[name], item), payload=ALL_CORRECT, version=0, submit=True)
    return Consolidation.objects.get(item_stage__item=item)


def test_consolidation_saves_with_the_same_version_exactly_one_wins(racer, many_items, users):
    consolidation = submit_both(users, many_items[0])
    url = f"/api/consolidations/{consolidation.id}/"
    version = consolidation.version
    for round_ in range(20):
        bodies = [
            {"payload": annotated(f"round {round_} tab {i}"), "version": version, "submit": False}
            for i in range(CLIENTS)
        ]
        answers = racer.race([(users["carol"], "PUT", url, body) for body in bodies])
        winner = one_winner(answers, 409)
        consolidation.refresh_from_db()
        assert consolidation.version == version + 1
        assert consolidation.draft["segments"][0]["comment"] == f"round {round_} tab {winner}"
        version += 1

    # The losers of the submission find the consolidation done, which says more than a version.
    bodies = [{"payload": annotated(f"gold {i}"), "version": version, "submit": True} for i in range(CLIENTS)]
    winner = one_winner(racer.race([(users["carol"], "PUT", url, body) for body in bodies]), 400)
    gold = GoldRecord.objects.get(item_stage__item=many_items[0])
    assert gold.payload["segments"][0]["comment"] == f"gold {winner}"


def test_submitting_and_discarding_at_once_exactly_one_wins(racer, many_items, users):
    outcomes = Counter()
    for item in many_items[:8]:
        consolidation = submit_both(users, item)
        url = f"/api/consolidations/{consolidation.id}/"
        answers = racer.race(
            [
                (
                    users["carol"],
                    "PUT",
                    url,
                    {
                        "payload": annotated("gold"),
                        "version": consolidation.version,
                        "submit": True,
                    },
                ),
                (users["admin"], "POST", url + "discard/", {"reason": "cannot agree"}),
                (users["carol"], "POST", url + "discard/", {"reason": "cannot agree either"}),
            ]
        )
        winner = one_winner(answers, 400)
        consolidation.refresh_from_db()
        stage = consolidation.item_stage
        if winner == 0:
            assert (consolidation.status, stage.status) == (
                ConsolidationStatus.DONE,
                StageStatus.DONE,
            )
            assert GoldRecord.objects.filter(item_stage=stage).exists()
        else:
            assert (consolidation.status, stage.status) == (
                ConsolidationStatus.DISCARDED,
                StageStatus.DISCARDED,
            )
            assert not GoldRecord.objects.filter(item_stage=stage).exists()
            assert consolidation.discard_reason == answers[winner][1]["discard_reason"]
        assert consolidation.version == 1
        outcomes["submitted" if winner == 0 else "discarded"] += 1
    assert sum(outcomes.values()) == 8


def test_reopening_races_the_last_submission_and_itself(racer, many_items, users):
    for item in many_items[:8]:
        alice, bob = assignment_of(users["alice"], item), assignment_of(users["bob"], item)
        save_annotation(assignment=alice, payload=ALL_CORRECT, version=0, submit=True)
        answers = racer.race(
            [
                (users["alice"], "POST", f"/api/assignments/{alice.id}/reopen/", {}),
                (users["alice"], "POST", f"/api/assignments/{alice.id}/reopen/", {}),
                (
                    users["bob"],
                    "PUT",
                    f"/api/assignments/{bob.id}/annotation/",
                    {"payload": ALL_CORRECT, "version": 0, "submit": True},
                ),
            ]
        )
        statuses = [status for status, _ in answers]
        assert statuses[2] == 200, answers  # bob's submission always stands
        assert sorted(statuses[:2]) in ([200, 400], [400, 400]), answers
        stored = Annotation.objects.get(assignment=alice)
        stage = alice.item_stage
        stage.refresh_from_db()
        if 200 in statuses[:2]:  # reopened before the consolidation opened: it waits for alice
            assert (stored.submitted, stored.version, stage.status) == (
                False,
                2,
                StageStatus.ANNOTATING,
            )
            assert not Consolidation.objects.filter(item_stage=stage).exists()
        else:  # the consolidation opened first, from alice's submitted work
            assert (stored.submitted, stored.version, stage.status) == (
                True,
                1,
                StageStatus.CONSOLIDATING,
            )


def test_escalating_races_saving_the_gold_record_and_discarding(racer, factcheck_project, users, make_user):
    """Step 2: a consolidator asks for a third rater while another saves the gold record and a
    third discards the item; exactly one wins, and the item is in that one's state only."""
    from annotation.models import AssignmentRole, ItemStage
    from annotation.services.assignments import assign_open_stages
    from annotation.services.projects import add_member

    add_member(project=factcheck_project, user=make_user("dave"), role="annotator")
    add_member(project=factcheck_project, user=users["admin"], role="consolidator")
    outcomes = Counter()
    for n in range(8):
        item = factcheck_project.items.create(prompt="p", response="r", external_id=f"race {n}")
        stage = ItemStage.objects.create(item=item, stage=2, status=StageStatus.READY, content=content(2))
        assign_open_stages(factcheck_project)
        for assignment in stage.assignments.order_by("id"):
            save_annotation(
                assignment=assignment,
                payload={"claims": [answer([CS, IR])]},
                version=0,
                submit=True,
            )
        consolidation = Consolidation.objects.get(item_stage=stage)
        url = f"/api/consolidations/{consolidation.id}/"
        answers = racer.race(
            [
                (users["carol"], "POST", url + "escalate/", {"reason": "cannot settle"}),
                (
                    users["admin"],
                    "PUT",
                    url,
                    {
                        "payload": {"claims": [answer([CS, IR])]},
                        "version": consolidation.version,
                        "submit": True,
                    },
                ),
                (users["admin"], "POST", url + "discard/", {"reason": "cannot agree"}),
            ]
        )
        winner = one_winner(answers, 400)
        consolidation.refresh_from_db()
        stage.refresh_from_db()
        third_raters = stage.assignments.filter(role=AssignmentRole.THIRD_RATER).count()
        expected = {
            0: (ConsolidationStatus.WAITING, StageStatus.ANNOTATING, 1, False),
            1: (ConsolidationStatus.DONE, StageStatus.DONE, 0, True),
            2: (ConsolidationStatus.DISCARDED, StageStatus.DISCARDED, 0, False),
        }[winner]
        assert (
            consolidation.status,
            stage.status,
            third_raters,
            GoldRecord.objects.filter(item_stage=stage).exists(),
        ) == expected
        outcomes[winner] += 1
    assert sum(outcomes.values()) == 8


def test_retrieving_a_claim_again_races_a_draft_save_and_nothing_is_lost(racer, factcheck_project, users, monkeypatch):
    """The retrieval clears the draft's stances of the claim under a new version: a save with
    the old version either lands first (and is then cleared of that claim only) or gets a 409."""
    from annotation.models import ItemStage
    from annotation.services.assignments import assign_open_stages

    def fake(claims, settings, search):
        for claim in claims:
            claim.update(queries=["again"], evidence=[passage(10), passage(11)], problems=[])
        return {"content": {"claims": claims}, "suggestion": None, "provenance": {}}

    monkeypatch.setattr("annotation.kinds.factcheck.retrieve_evidence", fake)
    outcomes = Counter()
    for n in range(8):
        item = factcheck_project.items.create(prompt="p", response="r", external_id=f"again {n}")
        stage = ItemStage.objects.create(item=item, stage=2, status=StageStatus.READY, content=content(2, 1))
        assign_open_stages(factcheck_project)
        assignment = stage.assignments.get(user=users["alice"])
        first = {"claims": [full_answer([IR, IR]), full_answer([IR])]}
        version = save_annotation(assignment=assignment, payload=first, version=0, submit=False).version
        edited = {
            "claims": [
                full_answer([CS, IR], reliable=[True, None]),
                full_answer([CS], reliable=[True], decided="no"),
            ]
        }
        answers = racer.race(
            [
                (
                    users["alice"],
                    "PUT",
                    f"/api/assignments/{assignment.id}/annotation/",
                    {"payload": edited, "version": version, "submit": False},
                ),
                (
                    users["admin"],
                    "POST",
                    f"/api/projects/{factcheck_project.id}/items/{item.id}/claims/0/retrieve/",
                    {},
                ),
            ]
        )
        assert answers[1][0] == 202, answers
        stored = Annotation.objects.get(assignment=assignment)
        stage.refresh_from_db()
        assert [p["text"] for p in stage.content["claims"][0]["evidence"]] == [
            "Passage 10.",
            "Passage 11.",
        ]
        assert stored.payload["claims"][0]["stances"] == [
            None,
            None,
        ]  # about the new passages: not judged yet
        if answers[0][0] == 200:  # the save landed first; the retrieval kept all but claim 0's stances
            assert stored.version == version + 2
            assert stored.payload["claims"][1]["decided"] == "no"
            outcomes["saved first"] += 1
        else:
            assert answers[0][0] == 409 and answers[0][1]["stored_version"] == version + 1
            assert stored.version == version + 1 and stored.payload["claims"][1]["decided"] == "yes"
            outcomes["retrieved first"] += 1
    assert sum(outcomes.values()) == 8


def test_reopening_a_gold_record_twice_at_once_exactly_one_wins(racer, many_items, users):
    from annotation.models import StageEvent
    from annotation.services.consolidation import save_consolidation

    for item in many_items[:6]:
        consolidation = submit_both(users, item)
        save_consolidation(
            consolidation=consolidation,
            user=users["carol"],
            payload=ALL_CORRECT,
            version=consolidation.version,
            submit=True,
        )
        url = f"/api/projects/{item.project_id}/items/{item.id}/stages/1/reopen/"
        answers = racer.race([(users["admin"], "POST", url, {"reason": f"tab {i}"}) for i in range(CLIENTS)])
        winner = one_winner(answers, 400)
        consolidation.refresh_from_db()
        assert consolidation.status == ConsolidationStatus.OPEN and consolidation.version == 2
        (event,) = StageEvent.objects.filter(item_stage=consolidation.item_stage)
        assert event.reason == f"tab {winner}"


def test_correcting_a_split_races_the_first_save_and_nothing_is_lost(racer, many_items, users):
    """The split is refused once an annotator has started: an annotator's first save either
    lands first (the split is refused, the draft kept) or finds the item being split again
    (the save is refused) — never a draft deleted with its assignment."""
    outcomes = Counter()
    for item in many_items:
        assignment = assignment_of(users["alice"], item)
        stage = assignment.item_stage
        before = list(stage.content["segments"])
        answers = racer.race(
            [
                (
                    users["alice"],
                    "PUT",
                    f"/api/assignments/{assignment.id}/annotation/",
                    {"payload": ALL_CORRECT, "version": 0, "submit": False},
                ),
                (
                    users["admin"],
                    "POST",
                    f"/api/projects/{item.project_id}/items/{item.id}/stages/1/split/",
                    {"units": ["One new sentence.", "Another new sentence."]},
                ),
            ]
        )
        (save_status, _), (split_status, split_answer) = answers
        stage.refresh_from_db()
        if save_status == 200:
            assert split_status == 400 and "started" in json.dumps(split_answer), answers
            assert stage.content["segments"] == before
            assert Annotation.objects.get(assignment=assignment).payload["segments"] == ALL_CORRECT["segments"]
            outcomes["saved first"] += 1
        else:
            assert split_status == 200 and save_status in (400, 404), answers
            assert stage.content["segments"] == ["One new sentence.", "Another new sentence."]
            assert not Annotation.objects.filter(assignment__item_stage=stage).exists()
            outcomes["split first"] += 1
    assert sum(outcomes.values()) == len(many_items)


def test_reassigning_races_the_first_save_and_nothing_is_lost(racer, many_items, users, make_user):
    """Reassigning takes an untouched assignment only: the annotator's first save lands first (the
    reassignment is refused) or the assignment has moved (the save is refused)."""
    from annotation.models import Role
    from annotation.services.projects import add_member

    dave = make_user("dave")
    add_member(project=many_items[0].project, user=dave, role=Role.ANNOTATOR)
    outcomes = Counter()
    for item in many_items:
        assignment = assignment_of(users["alice"], item)
        answers = racer.race(
            [
                (
                    users["alice"],
                    "PUT",
                    f"/api/assignments/{assignment.id}/annotation/",
                    {"payload": ALL_CORRECT, "version": 0, "submit": False},
                ),
                (
                    users["admin"],
                    "POST",
                    f"/api/projects/{item.project_id}/assignments/{assignment.id}/reassign/",
                    {},
                ),
            ]
        )
        (save_status, _), (move_status, _) = answers
        assignment.refresh_from_db()
        if save_status == 200:
            assert move_status == 400, answers
            assert assignment.user == users["alice"]
            assert Annotation.objects.get(assignment=assignment).version == 1
            outcomes["saved first"] += 1
        else:
            assert move_status == 200 and save_status == 404, answers
            assert assignment.user == dave and not Annotation.objects.filter(assignment=assignment).exists()
            outcomes["moved first"] += 1
    assert sum(outcomes.values()) == len(many_items)


def test_removing_an_annotator_races_their_submission_and_nothing_is_lost(racer, many_items, users, make_user):
    """Their submitted work stays: a submission that lands first is kept, a removal that lands
    first refuses the submission; either way the item has its two annotators again."""
    from annotation.models import Membership, Role
    from annotation.services.assignments import reassign
    from annotation.services.projects import add_member

    project = many_items[0].project
    outcomes = Counter()
    for n, item in enumerate(many_items[:8]):
        member = make_user(f"leaving{n}")
        membership = add_member(project=project, user=member, role=Role.ANNOTATOR)
        assignment = reassign(assignment_of(users["alice"], item))
        assert assignment.user == member
        version = save_annotation(assignment=assignment, payload=ALL_CORRECT, version=0, submit=False).version
        answers = racer.race(
            [
                (
                    member,
                    "PUT",
                    f"/api/assignments/{assignment.id}/annotation/",
                    {"payload": ALL_CORRECT, "version": version, "submit": True},
                ),
                (
                    users["admin"],
                    "DELETE",
                    f"/api/projects/{project.id}/members/{membership.id}/",
                    {},
                ),
            ]
        )
        (submit_status, _), (remove_status, _) = answers
        assert remove_status in (200, 204), answers
        assert not Membership.objects.filter(pk=membership.pk).exists()
        stage = assignment.item_stage
        if submit_status == 200:
            kept = Assignment.objects.get(pk=assignment.pk)
            assert kept.user == member and kept.status == "submitted"
            assert Annotation.objects.get(assignment=kept).submitted
            outcomes["submitted first"] += 1
        else:
            assert submit_status == 404, answers
            assert not Assignment.objects.filter(pk=assignment.pk).exists()
            assert not Annotation.objects.filter(assignment_id=assignment.pk).exists()
            outcomes["removed first"] += 1
        assert stage.assignments.count() == 2
    assert sum(outcomes.values()) == 8
