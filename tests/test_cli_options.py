"""The CLI's global options and choices: ``-v`` / ``-q`` (logging and progress bars), the
two-step parse (``--threads`` and the command first), and option choices generated from the
registries and enums they name."""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

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


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def _walk(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """A parser and every sub-parser below it (``annotators add``, ...)."""
    out = [parser]
    for child in _subparsers(parser).values():
        out.extend(_walk(child))
    return out


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_has_a_description_and_help_on_every_option(command: str) -> None:
    """Issue 31: ``probrank <cmd> --help`` describes the command and every option, shows no
    literal ``%%`` and lists the choices of an option that has them."""
    top = cli._parser(command)
    chosen = _subparsers(top)[command]
    for parser in _walk(chosen):
        assert parser.description and parser.description.strip(), parser.prog
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                assert all(a.help for a in action._choices_actions), parser.prog
                continue
            name = "/".join(action.option_strings) or action.dest
            assert action.help and action.help is not argparse.SUPPRESS, f"{parser.prog} {name}"
        text = parser.format_help()
        assert "%%" not in text, parser.prog
        assert "(PosteriorKind" not in text and "(Strategy" not in text, parser.prog


def test_serve_help_shows_the_choices_of_posterior_and_strategy() -> None:
    from probrank.acquisition.select import Strategy
    from probrank.models.interactive.settings import PosteriorKind

    text = " ".join(_subparsers(cli._parser("serve"))["serve"].format_help().split())
    assert "--posterior {" + ",".join(m.value for m in PosteriorKind) + "}" in text
    assert "--strategy {" + ",".join(m.value for m in Strategy) + "}" in text


def test_eval_m_takes_one_measure_before_the_files_as_trec_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 d1 1\n1 0 d2 0\n1 0 d3 1\n", encoding="utf-8")
    run = tmp_path / "a.run"
    run.write_text("1 Q0 d1 1 3.0 a\n1 Q0 d2 2 2.0 a\n1 Q0 d3 3 1.0 a\n", encoding="utf-8")
    assert main(["eval", "-m", "map", "-m", "ndcg_cut.10", str(qrels), str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0].strip() for line in lines[1:]] == ["map", "ndcg_cut_10"]
    # after the files, -m may still take several (the older habit)
    assert main(["eval", str(qrels), str(run), "-m", "map", "P@1", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["a.run"]) == {"map", "P@1"}
    # files in between: the last -m's extra values are the runs
    assert main(["eval", "-m", "map", str(qrels), "-m", "P@1", str(run)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["eval", "-m", "map"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("probrank: error: eval: the following arguments are required: qrels")
