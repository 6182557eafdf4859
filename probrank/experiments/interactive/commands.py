"""``probrank interactive``: one simulated cell as a table or JSON, or a real session.

:func:`interactive_command` runs one posterior x strategy x noise cell over a data set
(:func:`~probrank.experiments.interactive.run_cell`); :func:`human_session` runs a
:class:`~probrank.interactive.users.TerminalUser` session on one question with a durable log
that ``--resume`` continues.
"""

from __future__ import annotations

from typing import Any, TextIO

import torch

from probrank._options import parse_enum
from probrank.acquisition.select import Strategy
from probrank.exceptions import InputDataError
from probrank.experiments.interactive.cells import (
    REPORTED_ROUNDS,
    SYNTHETIC,
    Cell,
    load_experiment_data,
    run_cell,
)
from probrank.experiments.interactive.config import InteractiveExperimentSettings
from probrank.experiments.results import ExperimentResult
from probrank.models.interactive.settings import InteractiveRankerSettings, PosteriorKind

__all__ = ["human_session", "interactive_command"]


def _noise(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InputDataError(f"user noise t must be a positive number, got {value!r}")
    return float(value)


def _option_tables(config: str | None) -> tuple[InteractiveRankerSettings, dict[str, Any]]:
    """The ranker's settings and the ``[encoder]`` table of an ``--config`` file (an
    ``interactive`` config or a file of option tables; None: the defaults)."""
    if not config:
        return InteractiveRankerSettings(), {}
    from probrank.experiments import load_config

    settings = load_config(config, protocol="interactive")
    if not isinstance(settings, InteractiveExperimentSettings):  # pragma: no cover
        raise TypeError(f"expected interactive settings, got {type(settings).__name__}")
    return settings.ranker, settings.encoder.table()


def interactive_command(
    *,
    data: str,
    posterior: str,
    strategy: str,
    rounds: int,
    noise: float,
    seeds: int,
    split: str = "test",
    max_questions: int | None = None,
    config: str | None = None,
    progress: bool = True,
    threads: int = 1,
) -> tuple[str, dict[str, Any]]:
    """Run one cell (``probrank interactive``); returns the text table and the JSON summary.

    ``threads`` sets torch's intra-op threads for this process (1: the posteriors work on
    tiny matrices, where a second thread only adds waiting on a busy machine).
    """
    torch.set_num_threads(threads)
    options, encoder_table = _option_tables(config)
    cell = Cell(
        parse_enum(PosteriorKind, posterior, "posterior"),
        parse_enum(Strategy, strategy, "strategy"),
        _noise(noise),
    )
    if rounds < 0 or seeds < 1:
        raise InputDataError(f"need --rounds >= 0 and --seeds >= 1, got {rounds}, {seeds}")
    source = load_experiment_data(
        data,
        split,
        options=options,
        encoder_options={**encoder_table, "show_progress": progress},
        max_questions=max_questions,
        config_path=config or None,
        warm_start=options.for_cell(cell.posterior).needs_warm_start,
    )
    result = run_cell(source, cell, seeds=seeds, rounds=rounds, options=options, progress=progress)
    shown = [r for r in range(rounds + 1) if r in REPORTED_ROUNDS or r == rounds]
    table = ExperimentResult(
        f"interactive: {data} {split if data != SYNTHETIC else ''}".rstrip(),
        {cell.name: {**result.per_seed(shown)}},
        notes=[
            f"{len(source.questions)} questions, {seeds} seeds; median seconds per round "
            f"{result.median_round_seconds:.4f}"
        ],
    ).table()
    return table, result.to_json()


def human_session(
    *,
    data: str,
    question: str | None = None,
    posterior: str = "laplace",
    strategy: str = "ei",
    rounds: int | None = None,
    seed: int = 0,
    log: str | None = None,
    resume: str | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    config: str | None = None,
    threads: int = 1,
) -> list[int]:
    """A real session in the terminal on one question; returns the final ranking.

    The end prints the number of judgements in the log (those made before a ``--resume``
    included; skips are not judgements), or in this session when nothing is logged.

    Args:
        data: ``"liveqa-med"``, ``"mediqa"`` or ``"synthetic"``.
        question: Question id (``TQ5``); not needed with ``resume`` (the log names it).
        posterior: Posterior kind.
        strategy: Strategy name.
        rounds: Stop after this many judgements (default: until quit or exhausted).
        seed: Warm-start and session seed.
        log: Create a durable JSONL log here.
        resume: Resume the session logged here (and keep appending to it); its header's
            question, posterior and seed take precedence.
        stdin: Input stream (default ``sys.stdin``).
        stdout: Output stream (default ``sys.stdout``).
        config: TOML whose option tables override the defaults (as for simulations).
        threads: Torch intra-op threads while the session runs (restored afterwards). The
            default 1 is what the simulations use (``interactive_command``, the ``interactive``
            protocol), so that the warm start trained here is the very network they train and
            cache; the warm-start cache key records the thread count, which changes the
            trained weights.
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InputDataError(f"threads must be a positive integer, got {threads!r}")
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _human_session(
            data=data,
            question=question,
            posterior=posterior,
            strategy=strategy,
            rounds=rounds,
            seed=seed,
            log=log,
            resume=resume,
            stdin=stdin,
            stdout=stdout,
            config=config,
        )
    finally:
        torch.set_num_threads(previous)


def _human_session(
    *,
    data: str,
    question: str | None,
    posterior: str,
    strategy: str,
    rounds: int | None,
    seed: int,
    log: str | None,
    resume: str | None,
    stdin: TextIO | None,
    stdout: TextIO | None,
    config: str | None,
) -> list[int]:
    from probrank.interactive.log import SessionLog, check_new_log, read_log
    from probrank.interactive.users import TerminalUser

    if log and resume:
        raise InputDataError("pass --log to start a session or --resume to continue one, not both")
    if log:  # the session creates it only after the data is encoded and the warm start trained
        check_new_log(log)
    if resume:  # the log says which question, posterior and seed the session used
        # read under its lock before any data is loaded or encoded, so that a log in use by
        # another process (or malformed) is refused at once; a torn last line is reported
        # and cut off here, once
        probe = SessionLog.reopen(resume)
        probe.close()
        logged = probe.contents.header.get("metadata") or {}
        question = str(logged["question"]) if "question" in logged else question
        posterior = str(logged.get("posterior", posterior))
        seed = int(logged.get("seed", seed))
    if not question:
        raise InputDataError("--human needs --question (e.g. --question TQ5)")
    options, encoder_table = _option_tables(config)
    kind = parse_enum(PosteriorKind, posterior, "posterior")
    source = load_experiment_data(  # only the session's question is encoded
        data,
        "test",
        options=options,
        encoder_options=encoder_table,
        config_path=config or None,
        question=question,
        warm_start=options.for_cell(kind).needs_warm_start,
    )
    item = source.questions[0]
    ranker = source.ranker(seed, kind, source.options, strategy)
    if resume:  # the log's strategy and seed
        session = ranker.resume(resume, item.query, item.candidates, features=item.features)
    else:
        metadata = {"data": data, "question": question, "posterior": kind.value, "seed": seed}
        session = ranker.session(
            item.query,
            item.candidates,
            seed=seed,
            log_path=log,
            features=item.features,
            metadata=metadata,
        )
    user = TerminalUser(item.query, item.candidates, stdin=stdin, stdout=stdout)
    with session:
        before = session.num_judgements
        session.run(user, rounds)
        ranking = session.ranking()
        # the count shown is the log's own, read back while this session still holds its lock
        # (so no other process can have appended), not a counter of this run
        total = read_log(session.log_path).num_judgements if session.log_path else None
    if total is None:
        total = session.num_judgements
    out = stdout
    if out is None:
        import sys

        out = sys.stdout
    resumed = f", {before} of them before this run" if resume else ""
    where = f" in {session.log_path}" if session.log_path else ""
    out.write(f"\n{total} judgements{where}{resumed}. Best answers now:\n")
    for rank, index in enumerate(ranking[:5], start=1):
        out.write(f"{rank}. [{index}] {' '.join(item.candidates[index].split())[:100]}\n")
    out.flush()
    return ranking
