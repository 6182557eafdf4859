"""The CLI's global options and choices: ``-v`` / ``-q`` (logging and progress bars), the
two-step parse (``--threads`` and the command first), and option choices generated from the
registries and enums they name."""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys

import pytest

import probrank.cli as cli
from probrank.cli import COMMANDS, main
from probrank.cli._parsing import threads_before_parsing

EVAL = ("eval", "q", "r")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--threads", "2", "eval", "q", "r"], (2, "eval")),
        (["eval", "q", "r", "--threads", "3"], (3, "eval")),
        (["--threads=4", "-q", "demo"], (4, "demo")),
        (["--threads", "2", "fuse", "--threads", "5", "q"], (5, "fuse")),
        (["--threads", "x", "eval"], (None, "eval")),  # left to the parser's error
        (["--threads", "0", "eval"], (None, "eval")),
        (["-v", "experiment", "eval.toml"], (None, "experiment")),  # a value named like a command
        (["nonsense"], (None, None)),
        ([], (None, None)),
    ],
)
def test_threads_and_command_before_parsing(argv: list[str], expected: tuple) -> None:
    assert threads_before_parsing(argv, COMMANDS) == expected


def _record(monkeypatch: pytest.MonkeyPatch) -> dict:
    seen: dict = {}

    def handler(args: argparse.Namespace) -> None:
        from probrank._progress import progress_enabled

        seen["bars"] = progress_enabled()
        seen["hf_bars_off"] = os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS")
        log = logging.getLogger("probrank.experiments.something")
        log.debug("a debug message")
        log.info("an info message")
        log.warning("a warning")

    monkeypatch.setattr(cli.command_module("eval"), "run", handler)
    return seen


@pytest.mark.parametrize(
    ("argv", "bars", "shown", "hidden"),
    [
        ([*EVAL], True, ["probrank: an info message", "probrank: a warning"], ["debug"]),
        (
            ["-v", *EVAL],
            True,
            ["probrank.experiments.something: DEBUG: a debug message"],
            [],
        ),
        (["-q", *EVAL], False, ["probrank: a warning"], ["info message", "debug"]),
        ([*EVAL, "--quiet"], False, ["probrank: a warning"], ["info message"]),
    ],
)
def test_verbosity_sets_the_log_level_and_the_bars(
    argv: list[str],
    bars: bool,
    shown: list[str],
    hidden: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    seen = _record(monkeypatch)
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert seen["bars"] is bars
    assert seen["hf_bars_off"] == (None if bars else "1")
    for text in shown:
        assert text in err
    for text in hidden:
        assert text not in err
    # everything is put back
    assert "TQDM_DISABLE" not in os.environ and "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ
    assert logging.getLogger("probrank").handlers == []


def test_eval_q_is_still_per_topic(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict = {}
    monkeypatch.setattr(cli.command_module("eval"), "run", lambda args: seen.update(vars(args)))
    assert main(["eval", "-q", "qrels", "run"]) == 0
    assert seen["per_query"] is True and seen["quiet"] == 0
    assert main(["-q", "eval", "qrels", "run"]) == 0
    assert seen["per_query"] is False and seen["quiet"] == 1


def _choices(command: str, option: str) -> list[str]:
    parser = cli._parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if option in a.option_strings)
    return list(action.choices or [])


def test_choices_come_from_the_registries() -> None:
    from probrank.acquisition.select import Strategy
    from probrank.data.datasets import dataset_names
    from probrank.data.trec import OnDuplicate
    from probrank.demo.context import DemoSection
    from probrank.evaluation.significance_kinds import Correction, SignificanceTest
    from probrank.experiments.fuse import fuse_methods
    from probrank.fusion.normalize import Normalization
    from probrank.models.interactive.settings import PosteriorKind

    def values(kind: type) -> list[str]:
        return [m.value for m in kind]  # type: ignore[attr-defined]

    assert _choices("interactive", "--data") == list(dataset_names(graded=True))
    assert set(_choices("interactive", "--data")) == {"liveqa-med", "mediqa", "synthetic"}
    assert _choices("interactive", "--posterior") == values(PosteriorKind)
    assert _choices("interactive", "--strategy") == values(Strategy)
    assert _choices("fuse", "--method") == list(fuse_methods())
    assert _choices("fuse", "--norm") == values(Normalization)
    assert _choices("fuse", "--on-duplicate") == values(OnDuplicate)
    assert _choices("demo", "--sections") == values(DemoSection)
    assert _choices("eval", "--test") == values(SignificanceTest)
    assert _choices("eval", "--correction") == values(Correction)


def test_building_the_parsers_loads_nothing_heavy_before_the_threads_are_set() -> None:
    # the commands' parsers are built inside the thread scope (their choices may load numpy
    # or torch); before it, only the command's name is read: nothing heavy
    code = (
        "import sys\nimport probrank.cli as c\nc._parser(None)\n"
        "print(sorted({'numpy', 'torch', 'scipy', 'pandas'} & set(sys.modules)))\n"
        "c._parser('eval')\n"
        "print(sorted({'torch', 'scipy', 'pandas'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "[]"]


def test_every_command_has_its_arguments_only_when_chosen() -> None:
    parser = cli._parser("eval")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(COMMANDS)
    assert any("--measures" in a.option_strings for a in sub.choices["eval"]._actions)
    assert not any("--method" in a.option_strings for a in sub.choices["fuse"]._actions)
