from django.core.management.base import BaseCommand, CommandError

from annotation.evidence.corpora import create_corpus, embed_next_batch, run_corpus_import
from annotation.exceptions import DomainError
from annotation.models import CorpusState

from .import_items import find_project


class Command(BaseCommand):
    help = (
        "Import a JSONL corpus of documents ({title, url, text}) as step-2 evidence passages for one or more "
        "projects; with --embed, also compute every passage's embedding here instead of in a worker."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="JSONL file, one document a line")
        parser.add_argument("--name", required=True)
        parser.add_argument("--project", action="append", default=[], help="project id or name (repeatable)")
        parser.add_argument("--passage-sentences", type=int, default=5)
        parser.add_argument("--passage-stride", type=int, default=2)
        parser.add_argument("--embed", action="store_true", help="embed all passages now (can take long)")

    def handle(self, *args, **options):
        projects = [find_project(key) for key in options["project"]]
        try:
            with open(options["path"], "rb") as handle:
                corpus = create_corpus(
                    name=options["name"],
                    user=None,
                    upload=handle,
                    projects=projects,
                    passage_sentences=options["passage_sentences"],
                    passage_stride=options["passage_stride"],
                )
        except (DomainError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        corpus = run_corpus_import(corpus.id)  # a no-op if the in-process task has run it
        if corpus.state == CorpusState.FAILED:
            details = "\n".join(f"  line {e['line']}, field {e['field']}: {e['message']}" for e in corpus.errors)
            raise CommandError(f"corpus {corpus.name} not imported:\n{details}")
        self.stdout.write(
            f"corpus {corpus.id} ({corpus.name}): {corpus.documents} documents, {corpus.passages} passages"
        )
        if options["embed"]:
            while embed_next_batch(corpus.id):
                corpus.refresh_from_db()
                self.stdout.write(f"  embedded {corpus.embedded} of {corpus.passages}")
        self.stdout.write(self.style.SUCCESS(f"corpus {corpus.id} is {corpus.get_state_display().lower()}"))
