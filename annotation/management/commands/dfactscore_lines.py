"""Turn a D-FActScore result file and its generations into `format=dfactscore` import lines."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

RESULT_LISTS = ("decisions", "global_decisions")


def result_lines(result: dict, generations: list[dict]) -> list[dict]:
    """Each generation with its entries of the result's decisions lists (they hold one entry per
    generation, in the generations' order). The import checks the lines' fields."""
    present = [key for key in RESULT_LISTS if key in result]
    if not present:
        raise CommandError("the result file has neither decisions nor global_decisions")
    for key in present:
        if not isinstance(result[key], list):
            raise CommandError(f"the result file's {key} must be a list (one entry per generation)")
        if len(result[key]) != len(generations):
            raise CommandError(
                f"the result file's {key} has {len(result[key])} entries, "
                f"the generations file {len(generations)} lines: they must match one to one"
            )
    lines = []
    for index, generation in enumerate(generations):
        line = {**generation, **{key: result[key][index] for key in present}}
        if "model" in result and "model" not in line:
            line["model"] = result["model"]
        lines.append(line)
    return lines


class Command(BaseCommand):
    help = (
        "Make dfactscore import lines (labels_as=gold or suggestion) from a result file (decisions, "
        "global_decisions: one entry per generation) and its generations JSONL (prompt, name, response, "
        "candidates, model), in the same order."
    )

    def add_arguments(self, parser):
        parser.add_argument("result", help="the result JSON file")
        parser.add_argument("generations", help="the generations JSONL file, one line per generation")
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args, **options):
        try:
            with open(options["result"], encoding="utf-8") as file:
                result = json.load(file)
        except (OSError, ValueError) as exc:
            raise CommandError(f"{options['result']}: cannot read the result file ({exc})") from None
        if not isinstance(result, dict):
            raise CommandError(f"{options['result']}: must hold one JSON object")
        generations = []
        try:
            with open(options["generations"], encoding="utf-8") as file:
                for number, text in enumerate(file, start=1):
                    if not text.strip():
                        continue
                    try:
                        data = json.loads(text)
                    except ValueError as exc:
                        raise CommandError(f"{options['generations']}, line {number}: not JSON ({exc})") from None
                    if not isinstance(data, dict):
                        raise CommandError(f"{options['generations']}, line {number}: must be a JSON object")
                    generations.append(data)
        except OSError as exc:
            raise CommandError(f"{options['generations']}: cannot read the generations file ({exc})") from None
        lines = result_lines(result, generations)
        out = open(options["output"], "w", encoding="utf-8") if options["output"] else sys.stdout
        try:
            for line in lines:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        finally:
            if options["output"]:
                out.close()
        self.stderr.write(f"wrote {len(lines)} lines")
