from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.exceptions import ImportFailed, UploadTooLarge
from annotation.models import SystemRunState
from annotation.research.leaderboard import METRICS, metric
from annotation.research.predictions import (
    DEFAULT_RESAMPLES,
    MAX_RESAMPLES,
    create_system_run,
    run_system_run,
)

from .import_items import find_project


class Command(BaseCommand):
    help = (
        "Score a system's predictions (JSONL keyed like the exports) against a project's gold and store them "
        "for its leaderboard; prints the scores, or every bad line and exits non-zero."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version names the system's version here, not Django's
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("project", help="project id or name")
        parser.add_argument("path", help="JSONL file of predictions")
        parser.add_argument("--system", required=True, help="the fact-checker's name")
        parser.add_argument("--version", default="", dest="system_version", help="the system's version (optional)")
        parser.add_argument(
            "--resamples",
            type=int,
            default=DEFAULT_RESAMPLES,
            help=f"bootstrap resamples of the 95 %% intervals, 0 to {MAX_RESAMPLES} (default {DEFAULT_RESAMPLES})",
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
        parser.add_argument(
            "--domain", default="", help="the domain of the lines that name none (a file of one domain, e.g. math)"
        )
        parser.add_argument("--replace", action="store_true", help="replace the scores of this system and version")

    def handle(self, *args, **options):
        project = find_project(options["project"])
        try:
            with open(options["path"], "rb") as handle, transaction.atomic():
                run = create_system_run(
                    project=project,
                    user=None,
                    upload=handle,
                    system=options["system"],
                    version=options["system_version"],
                    resamples=options["resamples"],
                    seed=options["seed"],
                    replace=options["replace"],
                    queue=False,
                    domain=options["domain"],
                )
        except (ImportFailed, UploadTooLarge) as exc:
            errors = getattr(exc, "errors", None)
            raise CommandError(
                "refused:\n" + ("\n".join(f"  {e['field']}: {e['message']}" for e in errors) if errors else f"  {exc}")
            ) from exc
        except OSError as exc:
            raise CommandError(str(exc)) from exc
        run = run_system_run(run.id)
        if run is None:
            raise CommandError("the run was deleted while it was scored")
        if run.state == SystemRunState.FAILED:
            details = "\n".join(f"  line {e['line']}, field {e['field']}: {e['message']}" for e in run.errors)
            raise CommandError(f"nothing stored:\n{details}")
        if run.state != SystemRunState.DONE:
            self.stdout.write(self.style.WARNING(f"run {run.id} is {run.state}: a worker is scoring it"))
            return
        label = f"{run.system} {run.version}".strip()
        self.stdout.write(self.style.SUCCESS(f"scored {label} on {project.name} (run {run.id})"))
        for name, entry in sorted(run.scores.items(), key=lambda kv: kv[1].get("position", 0)):
            self.stdout.write(
                f"{entry['title']} ({name}): {entry['units']} units, {entry['missing']} without a prediction"
            )
            self._write_scores("  ", entry)
            for baseline in entry["baselines"].values():
                self._write_scores(f"  baseline {baseline['title']}: ", baseline["scores"], inline=True)
            if entry.get("agreed"):
                self.stdout.write(f"  agreed units only ({entry['agreed']['units']} units):")
                self._write_scores("    ", entry["agreed"])

    def _write_scores(self, prefix: str, scores: dict, inline: bool = False) -> None:
        measure = scores.get("measure", "labels") if scores.get("measure") in METRICS else "labels"
        parts = []
        for name, title in METRICS[measure]:
            value = metric(scores, name)
            interval = f" [{value['low']:.3f}, {value['high']:.3f}]" if value["low"] is not None else ""
            parts.append(f"{title} {value['value']:.3f}{interval}")
        if inline:
            self.stdout.write(prefix + "; ".join(parts))
        else:
            for part in parts:
                self.stdout.write(prefix + part)
