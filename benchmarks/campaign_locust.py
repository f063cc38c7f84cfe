"""Locust users of a lab's campaign, for ``benchmarks/campaign_load.py`` (which sets up the data,
starts the servers and runs this file headless). Not to be run alone: it reads the tokens, ids
and sessions that the driver wrote to ``$CAMPAIGN_CONFIG``.

- 50 annotators: open their queue, open an assignment, autosave every few seconds, submit;
- 5 consolidators: list the open consolidations, open one, save a draft;
- 2 admins: export every format of both projects, import a 10,000-line FELM file and poll the job;
- 2 researchers: the agreement page and its API, the leaderboard.

With a step-2 project (``campaign_load.py --step2-items``), some of the 50 annotators work on it
instead (step-2 annotators: open, autosave, submit step-2 payloads as the step-2 page does), and
one evidence user keeps the worker retrieving: evidence searches (polled until done), "retrieve
again" on claims of items nobody works on, and one import of items whose step 2 the worker
pre-computes by retrieval.
"""

import itertools
import json
import os
import random
import threading
import time

from locust import HttpUser, between, task

CONFIG = json.loads(open(os.environ["CAMPAIGN_CONFIG"], encoding="utf-8").read())
_counters = {
    role: itertools.count()
    for role in ("annotator", "consolidator", "admin", "researcher", "step2_annotator", "retriever")
}
STEP2 = bool(CONFIG.get("step2_project"))
STANCES = ("completely-support", "partially-support", "refute", "irrelevant")
_lock = threading.Lock()
ERROR_TYPES = ("knowledge_error", "reasoning_error", "irrelevant", "overclaim")


def _next(role: str) -> dict:
    with _lock:
        people = CONFIG[role + "s"]
        return people[next(_counters[role]) % len(people)]


def _log_in(user: HttpUser, role: str) -> dict:
    """The next person of ``role``, whose API token the user's requests carry from now on."""
    me = _next(role)
    user.client.headers.update({"Authorization": f"Token {me['token']}", "Accept": "application/json"})
    return me


def _segments(rng: random.Random, count: int, complete: bool) -> list[dict]:
    segments = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.75 or (complete and roll >= 0.9):
            segments.append({"label": True, "error_type": None, "comment": "", "refs": []})
        elif roll < 0.9:
            segments.append(
                {
                    "label": False,
                    "error_type": "knowledge_error",
                    "comment": "wrong year",
                    "refs": ["https://en.wikipedia.org/wiki/Example"],
                }
            )
        else:
            segments.append({"label": None, "error_type": None, "comment": "", "refs": []})
    return segments


class Annotator(HttpUser):
    fixed_count = len(CONFIG["annotators"])  # 50, or 50 less the step-2 annotators
    wait_time = between(2, 4)  # the page autosaves a few seconds apart while someone labels

    def on_start(self):
        me = _log_in(self, "annotator")
        self.rng = random.Random(me["token"])
        self.assignment, self.version, self.saves = None, 0, 0
        self.project = CONFIG["felm_project"]

    def _open_next(self):
        queue = self.client.get(
            f"/api/projects/{self.project}/assignments/?mine=true&page_size=20",
            name="annotator: queue",
        ).json()
        open_ones = [a for a in queue.get("results", []) if a["status"] != "submitted"]
        if not open_ones:
            self.assignment = None
            return
        self.assignment = open_ones[0]["id"]
        state = self.client.get(f"/api/assignments/{self.assignment}/annotation/", name="annotator: open").json()
        self.version, self.saves = state.get("version", 0), 0
        self.segments = len(open_ones[0]["content"].get("segments", [])) or 1

    @task
    def work(self):
        if self.assignment is None:
            self._open_next()
            if self.assignment is None:
                return
        submit = self.saves >= self.rng.randint(3, 6)
        body = {
            "payload": {"segments": _segments(self.rng, self.segments, submit)},
            "version": self.version,
            "submit": submit,
            "active_seconds": 3,
        }
        with self.client.put(
            f"/api/assignments/{self.assignment}/annotation/",
            json=body,
            catch_response=True,
            name="annotator: submit" if submit else "annotator: autosave",
        ) as response:
            if response.status_code == 200:
                self.version, self.saves = response.json()["version"], self.saves + 1
                if submit:
                    self.assignment = None
            elif response.status_code == 409:  # another tab of the same person: take its version
                response.failure("409 version conflict")
                self.assignment = None


class Consolidator(HttpUser):
    fixed_count = 5
    wait_time = between(3, 6)

    def on_start(self):
        me = _log_in(self, "consolidator")
        self.rng = random.Random(me["token"])

    @task
    def consolidate(self):
        listed = self.client.get(
            f"/api/projects/{CONFIG['felm_project']}/consolidations/?status=open",
            name="consolidator: list",
        ).json()
        open_ones = listed.get("results", [])
        if not open_ones:
            return
        chosen = self.rng.choice(open_ones)
        detail = self.client.get(f"/api/consolidations/{chosen['id']}/", name="consolidator: open").json()
        payload = detail.get("payload") or {
            "segments": [a for a in (detail.get("annotations") or [{}])[0].get("payload", {}).get("segments", [])]
        }
        with self.client.put(
            f"/api/consolidations/{chosen['id']}/",
            json={"payload": payload, "version": detail["version"], "submit": False},
            catch_response=True,
            name="consolidator: save",
        ) as response:
            if response.status_code == 409:
                response.success()  # another consolidator saved it in between: expected, not an error


class Admin(HttpUser):
    fixed_count = 2
    wait_time = between(5, 10)

    def on_start(self):
        _log_in(self, "admin")
        self.imported = False

    @task(3)
    def export(self):
        for project, formats in (
            (CONFIG["felm_project"], CONFIG["felm_formats"]),
            (CONFIG["factcheck_project"], CONFIG["factcheck_formats"]),
        ):
            for fmt in formats:
                with self.client.get(
                    f"/api/projects/{project}/export/?format={fmt}",
                    stream=True,
                    name=f"admin: export {fmt}",
                    catch_response=True,
                ) as response:
                    for _ in response.iter_content(1 << 16):
                        pass

    @task(1)
    def import_file(self):
        if self.imported:  # one 10,000-line import per admin and run
            return
        self.imported = True
        with open(CONFIG["import_file"], "rb") as handle:
            response = self.client.post(
                f"/api/projects/{CONFIG['import_project']}/import/",
                files={"file": ("felm.jsonl", handle, "application/jsonl")},
                data={"format": "felm"},
                name="admin: import (upload)",
            )
        if response.status_code != 202:
            return
        job_url, started = response.json()["url"], time.monotonic()
        while time.monotonic() - started < 120:
            state = self.client.get(job_url, name="admin: import (poll job)").json().get("state")
            if state in ("done", "failed"):
                self.environment.events.request.fire(
                    request_type="JOB",
                    name=f"admin: import 10,000 lines until {state}",
                    response_time=(time.monotonic() - started) * 1000,
                    response_length=0,
                    exception=None if state == "done" else RuntimeError("import failed"),
                    context={},
                )
                return
            time.sleep(0.5)


class Researcher(HttpUser):
    fixed_count = 2
    wait_time = between(3, 6)

    def on_start(self):
        me = _next("researcher")
        self.client.cookies.set(CONFIG["session_cookie"], me["session"])
        self.client.headers.update({"Authorization": f"Token {me['token']}"})

    @task
    def research(self):
        project = CONFIG["felm_project"]
        self.client.get(f"/projects/{project}/agreement/", name="researcher: agreement page")
        self.client.get(
            f"/api/projects/{project}/agreement/",
            name="researcher: agreement API",
            headers={"Accept": "application/json"},
        )
        self.client.get(f"/projects/{project}/leaderboard/", name="researcher: leaderboard page")


# -- step 2 (campaign_load.py --step2-items) -------------------------------------------------------


def _step2_answer(rng: random.Random, claim: dict, complete: bool) -> dict:
    """One claim's answer as the step-2 page builds it: a stance and a reliability for every
    passage, then the verdict; complete, it passes the server's completeness rules (step2.py)."""
    passages = len(claim.get("evidence") or [])
    stances = [rng.choice(STANCES) for _ in range(passages)]
    answer = {
        "stances": stances,
        "reliable": [None if s == "irrelevant" else rng.random() < 0.9 for s in stances],
        "decided": None,
        "manual_evidence": [],
        "factuality": None,
        "needs_edit": None,
        "correction": claim.get("text", ""),
        "used_evidence": [],
    }
    if not complete:
        return answer
    edit = rng.choice(("no", "no", "yes", "not_enough_evidence")) if passages else "not_enough_evidence"
    answer.update(
        decided="no" if edit == "not_enough_evidence" else "yes",
        needs_edit=edit,
        factuality={"yes": "false", "no": "true", "not_enough_evidence": "unknown"}[edit],
    )
    if edit == "yes":
        answer.update(correction=claim.get("text", "") + " (corrected)", used_evidence=[0])
    if rng.random() < 0.2:  # evidence the annotator found on their own
        answer["manual_evidence"] = [
            {
                "text": "It says otherwise.",
                "url": "https://m.example/a",
                "query": "who",
                "reliable": True,
                "sufficient": True,
            }
        ]
    return answer


class Step2Annotator(HttpUser):
    """A step-2 annotator: the queue, an assignment opened, a claim answered an autosave (the page
    saves a few seconds apart), submitted once every claim is answered."""

    abstract = not STEP2
    fixed_count = len(CONFIG.get("step2_annotators", []))
    wait_time = between(2, 4)

    def on_start(self):
        me = _log_in(self, "step2_annotator")
        self.rng = random.Random(me["token"])
        self.assignment = None

    def _open_next(self):
        queue = self.client.get(
            f"/api/projects/{CONFIG['step2_project']}/assignments/?mine=true&page_size=20",
            name="step-2 annotator: queue",
        ).json()
        open_ones = [a for a in queue.get("results", []) if a["status"] != "submitted" and a["stage"] == 2]
        if not open_ones:
            self.assignment = None
            return
        self.assignment, self.claims = open_ones[0]["id"], open_ones[0]["content"].get("claims", [])
        state = self.client.get(f"/api/assignments/{self.assignment}/annotation/", name="step-2 annotator: open").json()
        self.version, self.payload, self.answered = state.get("version", 0), state.get("payload") or {}, 0

    @task
    def work(self):
        if self.assignment is None:
            self._open_next()
            if self.assignment is None:
                return
        submit = self.answered >= len(self.claims)
        claims = list(self.payload.get("claims") or [None] * len(self.claims))
        if submit:
            claims = [_step2_answer(self.rng, claim, True) for claim in self.claims]
        else:  # the next claim's stances
            claims[self.answered] = _step2_answer(self.rng, self.claims[self.answered], False)
        body = {"payload": {"claims": claims}, "version": self.version, "submit": submit, "active_seconds": 3}
        with self.client.put(
            f"/api/assignments/{self.assignment}/annotation/",
            json=body,
            catch_response=True,
            name="step-2 annotator: submit" if submit else "step-2 annotator: autosave",
        ) as response:
            if response.status_code == 200:
                saved = response.json()
                self.version, self.payload = saved["version"], saved["payload"]
                self.answered += 1
                if submit:
                    self.assignment = None
            else:
                response.failure(f"{response.status_code}: {response.text[:300]}")
                self.assignment = None


class Retriever(HttpUser):
    """Keeps the worker retrieving evidence for the step-2 project while the others work."""

    abstract = not STEP2
    fixed_count = len(CONFIG.get("retrievers", []))
    wait_time = between(1, 3)

    def on_start(self):
        me = _log_in(self, "retriever")
        self.rng = random.Random(me["token"])
        self.project = CONFIG.get("step2_project")
        # first, one import of items whose step 2 the worker pre-computes by retrieval; polled
        # between the other tasks (one GET each), its time from the upload as a JOB row
        self.import_started = time.monotonic()
        with open(CONFIG["step2_late_file"], "rb") as handle:
            response = self.client.post(
                f"/api/projects/{self.project}/import/",
                files={"file": ("step2.jsonl", handle, "application/jsonl")},
                data={"format": "factcheck-bench", "labels_as": "gold"},
                name="evidence: import step-1 gold (upload)",
            )
        self.import_url = response.json()["url"] if response.status_code == 202 else None

    def _poll_import(self) -> None:
        if self.import_url is None:
            return
        name = f"import of {CONFIG['step2_late_items']} items"
        state = self.client.get(self.import_url, name=f"evidence: {name} (poll)").json().get("state")
        if state in ("done", "failed"):
            self.import_url = None
            self.environment.events.request.fire(
                request_type="JOB",
                name=f"evidence: {name} until done",
                response_time=(time.monotonic() - self.import_started) * 1000,
                response_length=0,
                exception=None if state == "done" else RuntimeError(f"{name} {state}"),
                context={},
            )

    def _until_done(self, url: str, name: str, started: float, timeout: float = 120) -> None:
        """Poll a job's url until it ends; its time from the request as a JOB row."""
        while time.monotonic() - started < timeout:
            state = self.client.get(url, name=f"evidence: {name} (poll)").json().get("state")
            if state in ("done", "failed"):
                break
            time.sleep(0.5)
        else:
            state = "timed out"
        self.environment.events.request.fire(
            request_type="JOB",
            name=f"evidence: {name} until done",
            response_time=(time.monotonic() - started) * 1000,
            response_length=0,
            exception=None if state == "done" else RuntimeError(f"{name} {state}"),
            context={},
        )

    @task(3)
    def search(self):
        self._poll_import()
        query = self.rng.choice(CONFIG["step2_queries"])
        started = time.monotonic()
        with self.client.post(
            f"/api/projects/{self.project}/evidence-searches/",
            json={"query": query, "claim": query},
            name="evidence: search (queue)",
            catch_response=True,
        ) as response:
            if response.status_code != 202:
                response.failure(f"{response.status_code}: {response.text[:300]}")
                return
        self._until_done(response.json()["url"], "search", started)

    @task(2)
    def retrieve_again(self):
        self._poll_import()
        item, claims = self.rng.choice(CONFIG["step2_reserved"])
        with self.client.post(
            f"/api/projects/{self.project}/items/{item}/claims/{self.rng.randrange(claims)}/retrieve/",
            name="evidence: retrieve a claim again (queue)",
            catch_response=True,
        ) as response:
            if response.status_code != 202:
                response.failure(f"{response.status_code}: {response.text[:300]}")
