from pathlib import Path

from django.apps import AppConfig
from django.conf import settings


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The core pre-annotates with the evidence wing's search without importing the wing (imported
        # here, not at the top: models load only once the app registry is ready).
        from annotation.evidence.corpus_search import corpus_search
        from annotation.services import stages

        stages.use_corpus_search(corpus_search)

        # Uploads spool under DATA_DIR (annotation.imports.uploads); Django's checks want the directory
        # to exist. Uploads make it again if it goes; a read-only DATA_DIR is the check's to report.
        try:
            Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
        except OSError:
            pass
