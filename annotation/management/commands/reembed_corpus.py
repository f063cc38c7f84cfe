from django.core.management.base import BaseCommand, CommandError

from annotation import dispatch
from annotation.evidence.corpora import (
    AGREEMENT_SAMPLE,
    SAME_EMBEDDINGS,
    clear_embeddings,
    embed_next_batch,
    embedding_agreement,
)
from annotation.exceptions import DomainError
from annotation.models import Corpus, CorpusState
from pipeline.embedding_backends import MODEL_NAME


class Command(BaseCommand):
    help = (
        "Make a corpus's passage embeddings again after the embedding backend or model changed "
        "(EMBEDDING_BACKEND): clear its vectors and queue the embedding task, or embed here with --now. "
        "Retrieval stays lexical for the passages not embedded again yet. With --check, only compare a "
        "sample of stored vectors with the current backend's; with --if-stale, re-embed only the corpora "
        "whose vectors differ. Restart the embedding workers with the new backend first: they make the "
        "vectors."
    )

    def add_arguments(self, parser):
        parser.add_argument("corpus", nargs="*", type=int, help="corpus id (repeatable)")
        parser.add_argument("--all", action="store_true", help="every imported corpus")
        parser.add_argument("--check", action="store_true", help="only report whether the stored vectors match")
        parser.add_argument("--if-stale", action="store_true", help="re-embed only corpora whose vectors differ")
        parser.add_argument("--now", action="store_true", help="embed here instead of in a worker (can take long)")
        parser.add_argument(
            "--min-agreement",
            type=float,
            default=SAME_EMBEDDINGS,
            help="mean cosine of the sample below which vectors differ (default %(default)s: "
            "int8 and float32 vectors of the same model agree at about 0.994)",
        )
        parser.add_argument("--sample", type=int, default=AGREEMENT_SAMPLE, help="passages compared per corpus")

    def handle(self, *args, **options):
        # loads NLTK and scikit-learn: kept out of web start-up
        from pipeline.retrieval import (
            embedding_model,  # loads NLTK and scikit-learn: kept out of web start-up
        )

        if options["all"] == bool(options["corpus"]):
            raise CommandError("name corpus ids or --all (not both)")
        if options["all"]:
            corpora = list(Corpus.objects.filter(state__in=[CorpusState.EMBEDDING, CorpusState.READY]).order_by("id"))
        else:
            found = {c.id: c for c in Corpus.objects.filter(id__in=options["corpus"])}
            missing = [str(i) for i in options["corpus"] if i not in found]
            if missing:
                raise CommandError(f"no corpus with id {', '.join(missing)}")
            corpora = [found[i] for i in dict.fromkeys(options["corpus"])]
        backend = getattr(embedding_model(), "backend", "torch")
        self.stdout.write(f"embedding backend here: {MODEL_NAME} ({backend})")
        for corpus in corpora:
            label = f"corpus {corpus.id} ({corpus.name})"
            if options["check"] or options["if_stale"]:
                agreement = embedding_agreement(corpus.id, options["sample"])
                if agreement is None:
                    verdict, stale = "no vectors yet", False
                else:
                    stale = agreement < options["min_agreement"]
                    verdict = (
                        f"stored vectors {'differ from' if stale else 'match'} this backend's "
                        f"(mean cosine {agreement:.4f} over {options['sample']} passages at most)"
                    )
                self.stdout.write(f"{label}: {corpus.embedded} of {corpus.passages} passages embedded; {verdict}")
                if options["check"] or not stale:
                    continue
            here = options["now"] or dispatch.runs_in_process()  # without a broker, here too
            try:
                corpus = clear_embeddings(corpus.id, enqueue=not here)
            except DomainError as exc:
                raise CommandError(str(exc)) from exc
            if here:
                while embed_next_batch(corpus.id):
                    corpus.refresh_from_db()
                    self.stdout.write(f"  embedded {corpus.embedded} of {corpus.passages}")
                corpus.refresh_from_db()
                self.stdout.write(self.style.SUCCESS(f"{label} re-embedded: {corpus.get_state_display().lower()}"))
            else:
                self.stdout.write(self.style.SUCCESS(f"{label}: vectors cleared, embedding queued"))
