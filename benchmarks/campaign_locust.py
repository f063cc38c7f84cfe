"""Locust users of a lab's campaign, for ``benchmarks/campaign_load.py`` (which sets up the data,
starts the servers and runs this file headless). Not to be run alone: it reads the tokens, ids
and sessions that the driver wrote to ``$CAMPAIGN_CONFIG``.

- 50 annotators: open their queue, open an assignment, autosave every few seconds, submit;
- 5 consolidators: list the open consolidations, open one, save a draft;
- 2 admins: export every format of both projects, import a 10,000-line FELM file and poll the job;
- 2 researchers: the agreement page and its API, the leaderboard.
"""

import itertools
import json
import os
import random
import threading
import time

from locust import HttpUser, between, task

CONFIG = json.loads(open(os.environ["CAMPAIGN_CONFIG"], encoding="utf-8").read())
_counters = {role: itertools.count() for role in ("annotator", "consolidator", "admin", "researcher")}
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
    fixed_count = 50
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
