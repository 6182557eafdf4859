"""``probrank annotators add|revoke|list``: the annotators of a judgement database and their
links (:class:`probrank.serve.annotators.AnnotatorRegistry`), beside a running server or not."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

__all__ = ["TORCH", "add_arguments", "run"]

TORCH = False

_DEFAULT_URL = "http://127.0.0.1:8765"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank annotators``."""
    from probrank.serve.server import DEFAULT_DB

    parser.description = (
        "Give each annotator a link of their own (a token bound to the name), end it, or list "
        "them. Works while `probrank serve` runs: a new link works and a revoked one is "
        "refused at once."
    )
    actions = parser.add_subparsers(dest="action", required=True)
    texts = {
        "add": "register NAME and print their judging link",
        "revoke": "end every link of NAME (answers stay)",
        "list": "the annotators, their links' state and answers",
    }
    add, revoke, listing = (
        actions.add_parser(name, help=text, description=text[:1].upper() + text[1:] + ".")
        for name, text in texts.items()
    )
    for action in (add, revoke):
        action.add_argument("name", metavar="NAME", help="the annotator's name")
    for action in (add, revoke, listing):
        action.add_argument(
            "--db", default=DEFAULT_DB, help=f"the judgement database (default {DEFAULT_DB})"
        )
    add.add_argument(
        "--url",
        default=None,
        help="the server's address as annotators reach it (default: the address the "
        f"server of this database announced when it started, else {_DEFAULT_URL})",
    )


def run(args: argparse.Namespace) -> None:
    """Do the action and print its result."""
    from probrank.serve.annotators import AnnotatorRegistry

    with AnnotatorRegistry(args.db) as registry:
        if args.action == "add":
            name, token = registry.add(args.name)
            url = args.url if args.url is not None else registry.announced_url()
            base = (url or _DEFAULT_URL).rstrip("/")
            print(f"{name}: {base}/?token={token}")
            print("probrank annotators: the link is shown once (only its hash is stored)")
        elif args.action == "revoke":
            ended = registry.revoke(args.name)
            print(f"{args.name}: {ended} link{'' if ended == 1 else 's'} ended")
        else:
            rows = registry.list()
            if not rows:
                print("no annotators yet: probrank annotators add NAME --db FILE")
            for row in rows:
                when = datetime.fromtimestamp(row.created, tz=timezone.utc).strftime("%Y-%m-%d")
                state = "link active" if row.active else "no active link"
                print(f"{row.name}\t{state}\t{row.answers} answers\tadded {when}")
