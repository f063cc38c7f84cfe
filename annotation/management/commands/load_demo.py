"""Create the demo users and projects of the embedded default (idempotent).

What the loading prints (the pipeline's tasks run in-process; the first run exports the embedding
model to ONNX, about 150 lines of exporter messages) goes to ``DATA_DIR/log/load_demo.log``; the
terminal gets what is happening, how long it took and the logins. ``-v 2`` prints everything."""

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from annotation.evidence.corpora import create_corpus
from annotation.imports.items import import_jsonl
from annotation.models import Project, Role, ThirdRater
from annotation.services.projects import add_member, create_project

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
DEMO_PASSWORD = "demo-pass-123"
DEMO_USERS = [
    ("admin", True, "staff admin: creates projects, imports, exports"),
    ("alice", False, "annotator"),
    ("bob", False, "annotator"),
    ("carol", False, "consolidator"),
    ("dave", False, "annotator (the third rater of the step-2 demo)"),
]
FELM_GUIDELINES = """# FELM segment labelling

For each segment of the response decide whether it **contains a factual error**.

* **Correct**: everything the segment states is true (or it states nothing checkable).
* **Contains an error**: pick the error type and write the reason (what is wrong and what is right):
  * *knowledge error*: a wrong fact;
  * *reasoning error*: a wrong step of reasoning or calculation;
  * *irrelevant to the question*: the segment does not answer the prompt;
  * *fooled*: the response accepted a false premise of the prompt.
* Add links to the pages that prove your judgement.

You never see the other annotator's labels; a consolidator merges both.
"""


FACTCHECK_GUIDELINES = """# Factcheck-Bench step 1

For each sentence of the response:

1. Rewrite it so it is understood **without the other sentences** (replace pronouns by names).
2. Say how **important** it is for answering the prompt, and whether it is **checkworthy**.
3. Check the **atomic claims** the machine proposed: each claim states one fact and stands on
   its own. Edit, add, remove or reorder them; give each a category and an importance.

Opinions, questions and remarks about being an AI are not checkworthy.
"""
STEP2_GUIDELINES = """# Factcheck-Bench step 2

Step 1 of these items is done (imported as gold). For each checkworthy factual claim:

1. Judge every evidence passage: does it **completely support**, **partially support**,
   **refute** the claim, or is it **irrelevant**? Is its source **reliable**?
2. Can the claim be **decided** from these passages? If not, **search** from the page (or paste
   what you find elsewhere) and add it as your evidence, with its URL and whether it suffices alone.
3. Say whether the claim is **true**, **false** or **unknown**, and correct a false claim with a
   **minimal edit**, ticking the evidence the correction rests on.

Stance suggestions, when a model gave them, are shown beside the choices and never selected.
A third annotator answers every item too; the consolidator sees all three answers.
"""
DEMO_PROJECTS = (
    ("Demo FELM", "felm", FELM_GUIDELINES, "felm_demo.jsonl"),
    ("Demo Factcheck-Bench", "factcheck", FACTCHECK_GUIDELINES, "factcheck_demo.jsonl"),
)
DFACTSCORE_GUIDELINES = """# D-FActScore: who is the paragraph about?

Each paragraph is an LLM biography of an ambiguous name; the candidate pages are the people who share it.

**Step A (from the paragraph alone, no outside knowledge):** how many individuals would a reader see? Put each
fact into one of them, then link each individual to the candidate page it describes, or *none of these*.

**Step B:** label each fact against its individual's linked page: *supported*, *not supported*, or
*irrelevant* (the fact is not about the target name).

**Plain FActScore pass:** is the fact supported by *any* candidate page, whatever the grouping?
"""
DFACTSCORE_PROJECT = ("Demo D-FActScore", "dfactscore_demo.jsonl")
# Items whose step 1 is imported as gold, so step 2 (evidence from the demo corpus) opens at once.
STEP2_PROJECT = (
    "Demo Factcheck-Bench step 2",
    "factcheck_step2_demo.jsonl",
    "evidence_corpus_demo.jsonl",
)


class Command(BaseCommand):
    help = "Create demo users (password %s) and demo FELM and Factcheck-Bench projects." % DEMO_PASSWORD

    def handle(self, *args, **options):
        first_run = not Project.objects.filter(name__in=[name for name, *_ in DEMO_PROJECTS]).exists()
        log = Path(settings.DATA_DIR) / "log" / "load_demo.log"
        if first_run:
            shown = os.path.relpath(log) if not os.path.relpath(log).startswith("..") else log
            self.stdout.write(
                "Loading the demo users and projects (first run: about a minute on 2 cores, the "
                "embedding model is prepared once; details in %s)…" % shown
            )
        started = time.monotonic()
        with self.output_to(log, quiet=options["verbosity"] < 2):
            # The pipeline's tasks run when this transaction commits, inside the redirection too.
            with transaction.atomic():
                self.load()
        if first_run:
            self.stdout.write("Demo loaded in %.0f s." % (time.monotonic() - started))
        self.stdout.write("Demo logins (password %s):" % DEMO_PASSWORD)
        for username, _, what in DEMO_USERS:
            self.stdout.write(f"  {username:<6} {what}")

    @contextmanager
    def output_to(self, log: Path, quiet: bool):
        """Everything written to the process's stdout and stderr (Python, C libraries, the
        exporters' prints) goes to ``log`` while quiet; on a failure the end of the log is shown."""
        if not quiet:
            yield
            return
        log.parent.mkdir(parents=True, exist_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        saved_streams = sys.stdout, sys.stderr
        with open(log, "a", buffering=1, errors="replace") as handle:
            os.dup2(handle.fileno(), 1)
            os.dup2(handle.fileno(), 2)
            sys.stdout = sys.stderr = handle  # for when sys.stdout is not fd 1 (tests, wrappers)
            try:
                yield
            except BaseException:
                failed = True
                raise
            else:
                failed = False
            finally:
                handle.flush()
                sys.stdout, sys.stderr = saved_streams
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                for fd in saved:
                    os.close(fd)
                if failed:
                    tail = log.read_text(errors="replace").splitlines()[-20:]
                    self.stderr.write("Loading the demo failed; the end of %s:\n%s" % (log, "\n".join(tail)))

    def load(self):
        User = get_user_model()
        users = {}
        for username, is_staff, _ in DEMO_USERS:
            user, created = User.objects.get_or_create(
                username=username, defaults={"is_staff": is_staff, "is_superuser": is_staff}
            )
            if created:
                user.set_password(DEMO_PASSWORD)
                user.save()
            users[username] = user
        for name, kind, guidelines, filename in DEMO_PROJECTS:
            if Project.objects.filter(name=name).exists():
                continue
            project = create_project(name=name, kind=kind, created_by=users["admin"], guidelines=guidelines)
            for username, role in (
                ("alice", Role.ANNOTATOR),
                ("bob", Role.ANNOTATOR),
                ("carol", Role.CONSOLIDATOR),
            ):
                add_member(project=project, user=users[username], role=role)
            with open(DEMO_DIR / filename, "rb") as handle:
                import_jsonl(project, handle, fmt="plain")
        self.step2_project(users)
        self.dfactscore_project(users)

    def step2_project(self, users):
        name, items_file, corpus_file = STEP2_PROJECT
        if Project.objects.filter(name=name).exists():
            return
        project = create_project(
            name=name,
            kind="factcheck",
            created_by=users["admin"],
            guidelines=STEP2_GUIDELINES,
            third_rater=ThirdRater.ALWAYS,
        )
        for username, role in (
            ("alice", Role.ANNOTATOR),
            ("bob", Role.ANNOTATOR),
            ("dave", Role.ANNOTATOR),
            ("carol", Role.CONSOLIDATOR),
        ):
            add_member(project=project, user=users[username], role=role)
        # The corpus's import is queued first, so it is searchable when step 2's retrieval runs.
        with open(DEMO_DIR / corpus_file, "rb") as handle:
            create_corpus(name="Demo evidence", user=users["admin"], upload=handle, projects=[project])
        with open(DEMO_DIR / items_file, "rb") as handle:
            import_jsonl(project, handle, fmt="factcheck-bench", labels_as="gold")

    def dfactscore_project(self, users):
        name, items_file = DFACTSCORE_PROJECT
        if Project.objects.filter(name=name).exists():
            return
        project = create_project(
            name=name,
            kind="dfactscore",
            created_by=users["admin"],
            guidelines=DFACTSCORE_GUIDELINES,
            pipeline_settings={"dfactscore": {"factscore_pass": True}},
        )
        for username, role in (
            ("alice", Role.ANNOTATOR),
            ("bob", Role.ANNOTATOR),
            ("carol", Role.CONSOLIDATOR),
        ):
            add_member(project=project, user=users[username], role=role)
        with open(DEMO_DIR / items_file, "rb") as handle:
            import_jsonl(project, handle, fmt="dfactscore")
