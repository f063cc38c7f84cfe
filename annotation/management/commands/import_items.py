from django.core.management.base import BaseCommand, CommandError

from annotation.exceptions import ImportFailed
from annotation.imports.items import LABELS_AS, ON_ERROR, import_jsonl
from annotation.models import Project


class Command(BaseCommand):
    help = "Import a JSONL file into a project (all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project id or name")
        parser.add_argument("path", help="JSONL file")
        parser.add_argument("--format", default="plain", help="plain, felm, … (the project kind's import formats)")
        parser.add_argument("--labels-as", default="ignore", choices=LABELS_AS)
        parser.add_argument(
            "--on-error",
            default="refuse",
            choices=ON_ERROR,
            help="refuse: a bad line fails the file; skip: import the good lines, list the bad ones",
        )
        parser.add_argument("--domain", default="", help="the domain of items whose line has none (e.g. math)")

    def handle(self, *args, **options):
        project = find_project(options["project"])
        try:
            with open(options["path"], "rb") as handle:
                result = import_jsonl(
                    project,
                    handle,
                    fmt=options["format"],
                    labels_as=options["labels_as"],
                    on_error=options["on_error"],
                    domain=options["domain"],
                )
        except ImportFailed as exc:
            details = "\n".join(f"  line {e['line']}, field {e['field']}: {e['message']}" for e in exc.errors)
            raise CommandError(f"nothing imported:\n{details}") from exc
        except OSError as exc:
            raise CommandError(str(exc)) from exc
        counts = {k: v for k, v in result.as_dict().items() if k not in ("skipped", "warnings")}
        self.stdout.write(self.style.SUCCESS(f"imported {result.items} items into {project.name}: {counts}"))
        for e in result.skipped:
            self.stdout.write(self.style.WARNING(f"  skipped line {e['line']}, field {e['field']}: {e['message']}"))
        for warning in result.warnings:
            self.stdout.write(self.style.WARNING(warning))


def find_project(key: str) -> Project:
    project = Project.objects.filter(pk=int(key)).first() if key.isdigit() else None
    project = project or Project.objects.filter(name=key).first()
    if project is None:
        raise CommandError(f"no project with id or name {key!r}")
    return project
