"""``manage.py check_constraint "TEXT"``: print the normalized constraint, one disjunct per line.

On an error it prints the message with its position (and a caret under the text) to stderr
and exits with status 2 (SPEC 4).
"""

from __future__ import annotations

import sys

import matching
from exchange.management.offline import OfflineCommand


class Command(OfflineCommand):
    help = "Parse and normalize a constraint; print it one disjunct per line, or the error."

    def add_arguments(self, parser):
        parser.add_argument("text", help="the constraint, in the text syntax of SPEC 2.3")

    def handle(self, *args, **options):
        text = options["text"]
        try:
            constraint = matching.parse(text)
        except matching.ConstraintError as exc:
            where = "" if exc.position is None else f"at character {exc.position + 1}: "
            self.stderr.write(f"error: {where}{exc.message}")
            if exc.position is not None and "\n" not in text and len(text) <= 200:
                self.stderr.write("  " + text)
                self.stderr.write("  " + " " * exc.position + "^")
            sys.exit(2)
        for line in matching.to_lines(constraint):
            self.stdout.write(line)
