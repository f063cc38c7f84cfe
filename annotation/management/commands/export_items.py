import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.exports.formats import export, export_formats

from .import_items import find_project


class Command(BaseCommand):
    help = (
        "Export a project as JSONL (consolidated records in a published shape, or raw annotations), or as a zip "
        "of JSONL files (factcheck-subtasks: --output required)."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", help="project id or name")
        parser.add_argument("--format", required=True, help="felm, annotations, … (see the project kind)")
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args, **options):
        project = find_project(options["project"])
        if options["format"] not in export_formats(project):
            raise CommandError(f"--format must be one of {', '.join(export_formats(project))}")
        stream = export(project, options["format"])
        binary = stream.content_type == "application/zip"
        if binary and not options["output"]:
            raise CommandError(f"--format {options['format']} writes a zip archive: give --output FILE")
        out = (
            open(options["output"], "wb" if binary else "w", encoding=None if binary else "utf-8")
            if options["output"]
            else sys.stdout
        )
        count = 0
        try:
            for chunk in stream.chunks:
                out.write(chunk)
                count += 1
        finally:
            if options["output"]:
                out.close()
        self.stderr.write(f"exported {count} {'pieces' if binary else 'records'}")
