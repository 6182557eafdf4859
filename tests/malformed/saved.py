"""Issue 27's library calls: saved-model manifests read against a typed schema at every level,
``save("")`` of a model or an index, and the DataFrame and JSON-lines readers.

Saved models are built by the call itself in a sibling of the case's folder (``<tmp>/model``),
so the folder's snapshot is untouched; each manifest case edits one field of a manifest that
loads (the positive control is ``test_saved_models_the_manifest_cases_edit_do_load``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.malformed.inputs import SENTINEL, LoaderCase

HUGE = "9" * 5000
"""An integer of 5000 digits (Python's ``int`` refuses more than 4300 with a ValueError)."""


# --- saved models: manifests read against a typed schema at every level ------------------------


def _save_qlfusion(folder: Path) -> Any:
    from probrank.models import _persist
    from probrank.models._settings import settings_to_json
    from probrank.models.qlfusion import QLFusion

    model = QLFusion()
    _persist.save_model(
        folder,
        model_class="QLFusion",
        settings=settings_to_json(model.settings),
        tensors={"quantifiers": model._new_net(2, 0).state_dict()},
        state={"run_names": ["a", "b"], "training": {"epochs": 3}},
        encoder=None,
    )
    return QLFusion


def _save_interactive(folder: Path) -> Any:
    from probrank.models.interactive import InteractiveRanker

    InteractiveRanker().save(folder)
    return InteractiveRanker


def _save_with_state(model_class: str, state: dict[str, Any]) -> Callable[[Path], Any]:
    """A manifest of ``model_class`` (settings checked later), for state-schema cases."""

    def save(folder: Path) -> Any:
        import importlib

        from probrank.models import _persist

        _persist.save_model(
            folder, model_class=model_class, settings={}, tensors={}, state=state, encoder=None
        )
        module = {"GPFRanker": "gpf_ranker", "MultiTaskRanker": "multitask"}[model_class]
        return getattr(importlib.import_module(f"probrank.models.{module}"), model_class)

    return save


GPF_STATE = {
    "head_options": {},
    "in_features": 4,
    "mean_field_factor": 0.39,
    "temperature": 1.0,
    "selected": {},
    "side_features": [],
}
MULTITASK_STATE = {
    "choice": {"ranking_weight": 0.5, "seed": 0, "threshold": 0.5, "keep_top": True},
    "in_features": 4,
}


def _manifest_api(
    save: Callable[[Path], Any], edit: Callable[[dict[str, Any]], Any] | str
) -> Callable[[Path], object]:
    """Save a model beside the case's folder, replace its manifest by ``edit(manifest)`` (a
    dict: dumped as JSON; a string: the file's text), and load it."""

    def call(folder: Path) -> object:
        saved = folder.parent / "model"
        cls = save(saved)
        file = saved / "manifest.json"
        if isinstance(edit, str):
            file.write_text(edit)
        else:
            manifest = json.loads(file.read_text())
            changed = edit(manifest)
            file.write_text(changed if isinstance(changed, str) else json.dumps(changed))
        return cls.load(saved)

    return call


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Set the field at ``a.b.c`` of the manifest."""

    def edit(manifest: dict[str, Any]) -> dict[str, Any]:
        *parents, last = path.split(".")
        node = manifest
        for key in parents:
            node = node[key]
        node[last] = value
        return manifest

    return edit


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def _manifest(name: str, save: Callable[[Path], Any], edit: Any, *expect: str) -> LoaderCase:
    return LoaderCase(
        f"manifest-{name}",
        "saved_model",
        _manifest_api(save, edit),
        ("model/manifest.json", "damaged manifest", *expect),
    )


QL = _save_qlfusion
IR = _save_interactive
GPF = _save_with_state("GPFRanker", GPF_STATE)
MT = _save_with_state("MultiTaskRanker", MULTITASK_STATE)

MANIFEST_CASES = [
    _manifest("nested-past-the-parser", QL, "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    _manifest(
        "format-version-5000-digits",
        QL,
        lambda m: json.dumps(m).replace('"format_version": 1', f'"format_version": {HUGE}'),
        "too many digits",
    ),
    _manifest("run-names-a-string", QL, _set("state.run_names", "ab"), "state.run_names"),
    _manifest("run-name-a-number", QL, _set("state.run_names", ["a", 7]), "state.run_names[1]"),
    _manifest("run-names-empty", QL, _set("state.run_names", []), "state.run_names must hold"),
    _manifest("training-a-list", QL, _set("state.training", [1]), "state.training"),
    _manifest(
        "training-nested-deep", QL, _set("state.training", _nested(60)), "nested more than 32"
    ),
    _manifest("state-unknown-key", QL, _set("state.extra", 1), "state has unknown keys"),
    _manifest("state-a-list", QL, _set("state", []), "state must be an object"),
    _manifest("settings-a-string", QL, _set("settings", "x"), "settings must be an object"),
    _manifest("settings-depth-an-object", QL, _set("settings.depth", {"a": 1}), "settings"),
    _manifest("settings-unknown-key", QL, _set("settings.colour", "red"), "settings", "colour"),
    _manifest("encoder-a-list", QL, _set("encoder", [1]), "encoder must be an object"),
    _manifest("weights-a-list", QL, _set("weights", [1]), "weights must be an object"),
    _manifest(
        "tensor-shape-a-string",
        QL,
        lambda m: _set(f"weights.quantifiers.tensors.{_first_tensor(m)}.shape", "3x4")(m),
        "weights.quantifiers.tensors.",
        "shape must be a list",
    ),
    _manifest(
        "sha256-a-number", QL, _set("weights.quantifiers.sha256", 5), "weights.quantifiers.sha256"
    ),
    _manifest("fitted-a-string", IR, _set("state.fitted", "yes"), "state.fitted must be true"),
    _manifest("swag-a-number", IR, _set("state.swag", 3), "state.swag must be an object"),
    _manifest("warm-start-a-number", IR, _set("settings.warm_start", 5), "settings"),
    _manifest("update-a-list", IR, _set("settings.update", [1, 2]), "settings"),
    _manifest("temperature-a-string", GPF, _set("state.temperature", "hot"), "state.temperature"),
    _manifest("head-options-a-list", GPF, _set("state.head_options", [1]), "state.head_options"),
    _manifest("in-features-huge", GPF, _set("state.in_features", 10**30), "state.in_features"),
    _manifest(
        "ranking-weight-a-string",
        MT,
        _set("state.choice.ranking_weight", "x"),
        "state.choice.ranking_weight must be a finite number",
    ),
    _manifest("choice-no-seed", MT, lambda m: _drop(m, "seed"), "state.choice lacks ['seed']"),
]


def _first_tensor(manifest: dict[str, Any]) -> str:
    return next(iter(manifest["weights"]["quantifiers"]["tensors"]))


def _drop(manifest: dict[str, Any], key: str) -> dict[str, Any]:
    del manifest["state"]["choice"][key]
    return manifest


def _save_api(where: str) -> Callable[[Path], object]:
    """Save a loaded QLFusion to ``where`` (``{d}`` is the case's folder), from the folder."""

    def call(folder: Path) -> object:
        import os

        saved = folder.parent / "model"
        model = _save_qlfusion(saved).load(saved)
        before = Path.cwd()
        os.chdir(folder)  # an empty name must not mean this folder
        try:
            return model.save(where.replace("{d}", str(folder)))
        finally:
            os.chdir(before)

    return call


def _save_index_api(folder: Path) -> object:
    """``BM25Index.save("")`` from the case's folder: refused, the folder left as it was."""
    import os

    from probrank.retrieval.bm25 import BM25Index
    from probrank.retrieval.collection import Collection

    index = BM25Index.build(Collection({"d1": "flu virus", "d2": "common cold"}), progress=False)
    before = Path.cwd()
    os.chdir(folder)
    try:
        return index.save("")
    finally:
        os.chdir(before)


SAVE_CASES = [
    LoaderCase(
        "save-index-empty-name", "model_save", _save_index_api, ("BM25 index folder name is empty",)
    ),
    LoaderCase("save-empty-name", "model_save", _save_api(""), ("model folder name is empty",)),
    LoaderCase("save-blank-name", "model_save", _save_api(" "), ("model folder name is empty",)),
    LoaderCase(
        "save-over-a-file",
        "model_save",
        _save_api("{d}/manifest.json"),
        ("{d}/manifest.json", "the path is a file, not a model folder"),
        {"manifest.json": SENTINEL},
    ),
    LoaderCase(
        "save-under-a-file",
        "model_save",
        _save_api("{d}/f/model"),
        ("a parent of the model folder is a file",),
        {"f": SENTINEL},
    ),
]


# --- DataFrame and JSON-lines readers -----------------------------------------------------------


def _run_frame(columns: list[str], rows: list[list[Any]], qrels: bool = False) -> Any:
    def call(folder: Path) -> object:
        import pandas as pd

        from probrank.data.trec import Qrels, Run

        frame = pd.DataFrame(rows, columns=columns)
        return Qrels.from_dataframe(frame) if qrels else Run.from_dataframe(frame)

    return call


def _candidates_frame(columns: list[str], rows: list[list[Any]]) -> Any:
    def call(folder: Path) -> object:
        import pandas as pd

        from probrank.data.candidates import CandidateList

        return CandidateList.from_dataframe(pd.DataFrame(rows, columns=columns))

    return call


def _lists(folder: Path) -> object:
    from probrank.data.candidates import CandidateList

    return CandidateList.from_jsonl(folder / "lists.jsonl")


def _line(qid: Any = "q1", cid: Any = "a", grade: str | None = None) -> str:
    first = {"id": cid, "text": "A virus."}
    second = {"id": "b", "text": "No."}
    text = json.dumps({"qid": qid, "query": "flu?", "candidates": [first, second]})
    if grade is not None:
        text = text.replace('"text": "A virus."}', f'"text": "A virus.", "grade": {grade}}}')
        text = text.replace('"text": "No."}', '"text": "No.", "grade": 0}')
    return text + "\n"


RUN_COLUMNS = ["qid", "docno", "score"]
LIST_COLUMNS = ["qid", "query", "candidate_id", "candidate"]
ROW = ["q1", "flu?", "a", "A virus."]

READER_CASES = [
    LoaderCase(
        "run-frame-two-qid-columns",
        "run_frame",
        _run_frame(["qid", "qid", "docno", "score"], [["q1", "q2", "d1", 1.0]]),
        ("the DataFrame has two or more columns named ['qid']",),
    ),
    LoaderCase(
        "run-frame-score-10e400",
        "run_frame",
        _run_frame(RUN_COLUMNS, [["q1", "d1", 10**400]]),
        ("row 0", "is not a finite double"),
    ),
    LoaderCase(
        "run-frame-none-docno",
        "run_frame",
        _run_frame(RUN_COLUMNS, [["q1", "d1", 1.0], ["q1", None, 2.0]]),
        ("row 1", "missing 'docno'"),
    ),
    LoaderCase(
        "qrels-frame-grade-10e30",
        "run_frame",
        _run_frame(["qid", "docno", "label"], [["q1", "d1", 10**30]], qrels=True),
        ("row 0", "out of range"),
    ),
    LoaderCase(
        "qrels-frame-two-label-columns",
        "run_frame",
        _run_frame(["qid", "docno", "label", "label"], [["q1", "d1", 1, 0]], qrels=True),
        ("two or more columns named ['label']",),
    ),
    LoaderCase(
        "frame-nan-candidate-id",
        "candidates_frame",
        _candidates_frame(LIST_COLUMNS, [ROW, ["q1", "flu?", float("nan"), "No."]]),
        ("row 1", "missing 'candidate_id'"),
    ),
    LoaderCase(
        "frame-none-candidate-id",
        "candidates_frame",
        _candidates_frame(LIST_COLUMNS, [ROW, ["q1", "flu?", None, "No."]]),
        ("row 1", "missing 'candidate_id'"),
    ),
    LoaderCase(
        "frame-two-candidate-columns",
        "candidates_frame",
        _candidates_frame([*LIST_COLUMNS, "candidate"], [[*ROW, "other"]]),
        ("two or more columns named ['candidate']",),
    ),
    LoaderCase(
        "frame-grade-huge",
        "candidates_frame",
        _candidates_frame([*LIST_COLUMNS, "grade"], [[*ROW, 10**30]]),
        ("row 0", "'grade' is out of range"),
    ),
    LoaderCase(
        "jsonl-null-qid",
        "candidates_jsonl",
        _lists,
        ("{d}/lists.jsonl:1:", "'qid' is missing (null)"),
        {"lists.jsonl": _line(qid=None)},
    ),
    LoaderCase(
        "jsonl-null-id",
        "candidates_jsonl",
        _lists,
        ("{d}/lists.jsonl:2:", "candidate 'id' is missing (null)"),
        {"lists.jsonl": _line(qid="q0") + _line(cid=None)},
    ),
    LoaderCase(
        "jsonl-nan-id",
        "candidates_jsonl",
        _lists,
        ("{d}/lists.jsonl:1:", "candidate 'id' is missing"),
        {"lists.jsonl": _line().replace('"id": "a"', '"id": NaN')},
    ),
    LoaderCase(
        "jsonl-object-qid",
        "candidates_jsonl",
        _lists,
        ("{d}/lists.jsonl:1:", "'qid' must be a string or a number"),
        {"lists.jsonl": _line(qid={"a": 1})},
    ),
    LoaderCase(
        "jsonl-grade-5000-digits",
        "candidates_jsonl",
        _lists,
        ("{d}/lists.jsonl:1:", "a number with too many digits"),
        {"lists.jsonl": _line(grade=HUGE)},
    ),
    LoaderCase(
        "jsonl-grade-beyond-int64",
        "candidates_jsonl",
        _lists,
        ("{d}/lists.jsonl:1:", "grade is out of range"),
        {"lists.jsonl": _line(grade="9" * 40)},
    ),
]

SURFACE_LOADER_CASES = [*MANIFEST_CASES, *SAVE_CASES, *READER_CASES]
