import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.exports import export_formats, export_jsonl

from .import_items import find_project


class Command(BaseCommand):
    help = "Export a project as JSONL (consolidated records in a published shape, or raw annotations)."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project id or name")
        parser.add_argument("--format", required=True, help="felm, annotations, … (see the project kind)")
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args, **options):
        project = find_project(options["project"])
        if options["format"] not in export_formats(project):
            raise CommandError(f"--format must be one of {', '.join(export_formats(project))}")
        out = open(options["output"], "w", encoding="utf-8") if options["output"] else sys.stdout
        count = 0
        try:
            for line in export_jsonl(project, options["format"]):
                out.write(line)
                count += 1
        finally:
            if options["output"]:
                out.close()
        self.stderr.write(f"exported {count} records")
