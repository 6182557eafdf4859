"""Measure names: ir-measures syntax and trec_eval's own names, all validated up front.

Every name is parsed into a :class:`MeasureSpec` before any run is read or evaluated, so a
typo or a bad parameter is a one-line :class:`~probrank.exceptions.InputDataError`, never an
abort in the middle of an evaluation. Two spellings are accepted:

* ir-measures syntax: ``AP``, ``P@10``, ``nDCG@10``, ``P(rel=2)@10``, ``IPrec@0.1``,
  ``RBP(p=0.8)``, ``SetF(beta=0.5)``, ``Judged@10``. ``rel=L`` sets trec_eval's ``-l`` for that
  measure alone. Such a name is reported as given.
* trec_eval's names as it prints them (``map``, ``P_10``, ``ndcg_cut_10``, ``recip_rank``,
  ``num_rel_ret``, ``iprec_at_recall_0.10``, ``unj_10``, ``set_F_0.5``, ``rbp_p=0.8``), its
  ``-m`` parameter syntax (``P.5,10``, ``ndcg_cut.10``, ``iprec_at_recall..1,.2``,
  ``set_F.0.5``, ``rbp.p=0.8``), a bare family name with cut-offs (``P``, ``recall``,
  ``success``, ``map_cut``, ``ndcg_cut``, ``unj``, ``iprec_at_recall``: trec_eval's default
  cut-offs) and ``official`` (trec_eval's default measure set). These are reported under the
  names trec_eval prints (``P.5,10`` gives ``P_5`` and ``P_10``).

Cut-offs are positive integers (``P@0``, ``P@-1``, ``P.0`` are errors, as in trec_eval), recall
levels numbers in [0, 1], ``rel`` a non-negative integer, RBP's ``p`` in (0, 1) and SetF's
``beta`` a finite number >= 0.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import Enum

from probrank.exceptions import InputDataError

__all__ = [
    "FAMILIES",
    "Aggregate",
    "Cutoff",
    "FamilyInfo",
    "MeasureSpec",
    "measure_help",
    "parse_measure_names",
]


class Cutoff(str, Enum):
    """What a measure family takes after ``@``."""

    NONE = "none"
    """Nothing."""
    OPTIONAL = "optional"
    """An optional positive integer rank cut-off (``AP`` and ``AP@10`` are both measures)."""
    REQUIRED = "required"
    """A positive integer rank cut-off, which must be given (``P@10``)."""
    RECALL = "recall"
    """A recall level in [0, 1], which must be given (``IPrec@0.1``)."""


class Aggregate(str, Enum):
    """How per-topic values become trec_eval's ``all`` value."""

    MEAN = "mean"
    """Sum over topics in topic order divided by the number of topics."""
    SUM = "sum"
    """Sum over topics (counts)."""
    GEOMETRIC = "geometric"
    """``exp(mean(log(max(value, 1e-5))))`` (trec_eval's ``gm_map``)."""
    NUM_REL = "num_rel"
    """Sum over topics; with ``-c``, trec_eval counts the grades > 0 of every qrels topic
    instead, whatever ``-l`` is."""


@dataclass(frozen=True)
class FamilyInfo:
    """One measure family.

    Attributes:
        name: The ir-measures name (``P``, ``AP``, ``nDCG``).
        trec_name: trec_eval's measure name (``P``, ``map``), or None.
        trec_cut_name: trec_eval's name of the variant with a rank cut-off (``map_cut``).
        cutoff: What follows ``@``.
        params: Keyword parameters allowed in ``Name(key=value)``.
        follows_level: Whether trec_eval's ``-l`` applies.
        aggregate: How the ``all`` value is formed.
        trec_defaults: trec_eval's default cut-offs, for a bare family name.
        description: One line for ``probrank eval --help``.
    """

    name: str
    trec_name: str | None
    description: str
    trec_cut_name: str | None = None
    cutoff: Cutoff = Cutoff.NONE
    params: frozenset[str] = frozenset({"rel"})
    follows_level: bool = True
    aggregate: Aggregate = Aggregate.MEAN
    trec_defaults: tuple[float, ...] = field(default=())

    @property
    def is_count(self) -> bool:
        """Whether the values are counts (printed as integers)."""
        return self.aggregate in (Aggregate.SUM, Aggregate.NUM_REL)


_CUTS = (5.0, 10.0, 15.0, 20.0, 30.0, 100.0, 200.0, 500.0, 1000.0)
_RECALLS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_NO_PARAMS: frozenset[str] = frozenset()

FAMILIES: dict[str, FamilyInfo] = {
    f.name: f
    for f in [
        FamilyInfo(
            "NumQ",
            "num_q",
            "topics evaluated",
            params=_NO_PARAMS,
            follows_level=False,
            aggregate=Aggregate.SUM,
        ),
        FamilyInfo(
            "NumRet",
            "num_ret",
            "documents retrieved (NumRet(rel=L) is NumRelRet)",
            follows_level=False,
            aggregate=Aggregate.SUM,
        ),
        FamilyInfo(
            "NumRel",
            "num_rel",
            "relevant documents judged (with -c, `all` counts grades > 0, as trec_eval)",
            aggregate=Aggregate.NUM_REL,
        ),
        FamilyInfo(
            "NumRelRet", "num_rel_ret", "relevant documents retrieved", aggregate=Aggregate.SUM
        ),
        FamilyInfo(
            "AP",
            "map",
            "average precision; AP@k is map_cut_k (precisions to rank k / all relevant)",
            trec_cut_name="map_cut",
            cutoff=Cutoff.OPTIONAL,
            trec_defaults=_CUTS,
        ),
        FamilyInfo(
            "GMAP",
            "gm_map",
            "AP averaged geometrically, exp(mean(log(max(AP, 1e-5))))",
            aggregate=Aggregate.GEOMETRIC,
        ),
        FamilyInfo("Rprec", "Rprec", "precision at rank R, R = number of relevant documents"),
        FamilyInfo("Bpref", "bpref", "binary preference (Buckley and Voorhees 2004)"),
        FamilyInfo("infAP", "infAP", "inferred AP (Yilmaz and Aslam 2006)"),
        FamilyInfo(
            "RR",
            "recip_rank",
            "reciprocal rank of the first relevant document; RR@k: within the top k",
            cutoff=Cutoff.OPTIONAL,
        ),
        FamilyInfo(
            "IPrec",
            "iprec_at_recall",
            "interpolated precision at a recall level (trec_eval 10's lround rule)",
            cutoff=Cutoff.RECALL,
            trec_defaults=_RECALLS,
        ),
        FamilyInfo(
            "P",
            "P",
            "precision at k (divided by k)",
            cutoff=Cutoff.REQUIRED,
            trec_defaults=_CUTS,
        ),
        FamilyInfo("R", "recall", "recall at k", cutoff=Cutoff.REQUIRED, trec_defaults=_CUTS),
        FamilyInfo(
            "Success",
            "success",
            "1 if a relevant document is in the top k, else 0",
            cutoff=Cutoff.REQUIRED,
            trec_defaults=(1.0, 5.0, 10.0),
        ),
        FamilyInfo(
            "nDCG",
            "ndcg",
            "normalised DCG, gain = grade, ignores -l; nDCG@k is ndcg_cut_k",
            trec_cut_name="ndcg_cut",
            cutoff=Cutoff.OPTIONAL,
            params=_NO_PARAMS,
            follows_level=False,
            trec_defaults=_CUTS,
        ),
        FamilyInfo("SetP", "set_P", "precision of the whole retrieved set"),
        FamilyInfo("SetR", "set_recall", "recall of the whole retrieved set"),
        FamilyInfo(
            "SetF",
            "set_F",
            "(beta+1)PR/(beta P+R) of set precision and recall (beta=1 by default)",
            params=frozenset({"rel", "beta"}),
        ),
        FamilyInfo("SetAP", "set_map", "set precision times set recall"),
        FamilyInfo(
            "RBP",
            "rbp",
            "rank-biased precision (p=0.9), gain = grade / top grade, ignores -l; "
            "RBP(rel=L): gain 1 for grade >= L",
            params=frozenset({"p", "rel"}),
            follows_level=False,
        ),
        FamilyInfo(
            "Judged",
            None,
            "documents in the top k with a grade >= 0, divided by k",
            cutoff=Cutoff.REQUIRED,
            params=_NO_PARAMS,
            follows_level=False,
            trec_defaults=(5.0, 10.0, 20.0),
        ),
        FamilyInfo(
            "Unjudged",
            "unj",
            "documents in the top k without a grade >= 0, divided by k",
            cutoff=Cutoff.REQUIRED,
            params=_NO_PARAMS,
            follows_level=False,
            trec_defaults=(5.0, 10.0, 20.0),
        ),
    ]
}
"""The measure families probrank evaluates, by ir-measures name."""

_BY_TREC_NAME = {f.trec_name: f for f in FAMILIES.values() if f.trec_name}
# trec_eval families whose printed names carry a cut-off (P_10, map_cut_10, iprec_at_recall_0.10)
_TREC_CUT_FAMILIES: dict[str, FamilyInfo] = {
    **{
        f.trec_name: f
        for f in FAMILIES.values()
        if f.trec_name and f.cutoff in (Cutoff.REQUIRED, Cutoff.RECALL)
    },
    **{f.trec_cut_name: f for f in FAMILIES.values() if f.trec_cut_name},
}
_OFFICIAL = (
    "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P",
)  # fmt: skip
"""trec_eval's ``official`` measures (its default set, without ``runid``)."""


@dataclass(frozen=True)
class MeasureSpec:
    """A parsed, validated measure.

    Attributes:
        name: The name it is reported under.
        family: The family's ir-measures name (a key of :data:`FAMILIES`).
        cutoff: Rank cut-off (``@k``), or None.
        recall: Recall level of ``IPrec``, or None.
        rel: Relevance level set by the name (``rel=``), or None to follow ``-l``.
        p: RBP's persistence.
        beta: SetF's beta.
    """

    name: str
    family: str
    cutoff: int | None = None
    recall: float | None = None
    rel: int | None = None
    p: float = 0.9
    beta: float = 1.0

    @property
    def info(self) -> FamilyInfo:
        """The measure's family."""
        return FAMILIES[self.family]

    def level(self, default: int) -> int:
        """The relevance level this measure uses, given trec_eval's ``-l``."""
        if self.rel is not None:
            return self.rel
        return default if self.info.follows_level else 1


_IR_NAME = re.compile(
    r"(?P<family>[A-Za-z][A-Za-z0-9_]*)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[^@()]*))?"
)
_POSITIVE_INT = re.compile(r"\+?0*[1-9][0-9]*")
_INT = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_CUT_START = frozenset("0123456789.+-")


def _bad(name: str, what: str) -> InputDataError:
    return InputDataError(f"measure {name!r}: {what}")


def _unknown(name: str) -> InputDataError:
    known = [*FAMILIES, *_BY_TREC_NAME, *_TREC_CUT_FAMILIES]
    stem = re.split(r"[@(._]", name, maxsplit=1)[0] or name
    import difflib  # only to word an error

    close = difflib.get_close_matches(stem, known, n=1) or difflib.get_close_matches(
        name, known, n=1
    )
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return InputDataError(
        f"unknown measure {name!r}{hint}; `probrank eval --help` lists the measures"
    )


def _cut(name: str, info: FamilyInfo, text: str) -> tuple[int | None, float | None]:
    """A cut-off (``int``) or, for ``IPrec``, a recall level (``float``)."""
    if info.cutoff is Cutoff.RECALL:
        if _NUMBER.fullmatch(text) is None or not 0.0 <= float(text) <= 1.0:
            raise _bad(name, f"the recall level must be a number in [0, 1], got {text!r}")
        return None, float(text)
    if _POSITIVE_INT.fullmatch(text) is None:
        raise _bad(name, f"the cut-off must be a positive integer, got {text!r}")
    return int(text), None


def _keyword(name: str, info: FamilyInfo, key: str, text: str) -> int | float:
    if key not in info.params:
        allowed = ", ".join(sorted(info.params)) or "none"
        raise _bad(name, f"{info.name} takes no parameter {key!r} (allowed: {allowed})")
    if key == "rel":
        if _INT.fullmatch(text) is None or int(text) < 0:
            raise _bad(name, f"rel must be a non-negative integer, got {text!r}")
        return int(text)
    if _NUMBER.fullmatch(text) is None or not math.isfinite(float(text)):
        raise _bad(name, f"{key} must be a finite number, got {text!r}")
    value = float(text)
    if key == "p" and not 0.0 < value < 1.0:
        raise _bad(name, f"RBP's persistence p must be in (0, 1), got {text}")
    if key == "beta" and value < 0.0:
        raise _bad(name, f"beta must be >= 0, got {text}")
    return value


def _spec(name: str, info: FamilyInfo, params: dict[str, int | float]) -> MeasureSpec:
    return MeasureSpec(
        name=name,
        family=info.name,
        rel=None if "rel" not in params else int(params["rel"]),
        p=float(params.get("p", 0.9)),
        beta=float(params.get("beta", 1.0)),
    )


def _parse_ir(name: str) -> MeasureSpec | None:
    """ir-measures syntax, or None when the name is not of that form."""
    match = _IR_NAME.fullmatch(name)
    if match is None or match["family"] not in FAMILIES:
        return None
    info = FAMILIES[match["family"]]
    params: dict[str, int | float] = {}
    if match["params"] is not None:
        if not match["params"].strip():
            raise _bad(name, "empty parameter list")
        for item in match["params"].split(","):
            key, eq, value = (part.strip() for part in item.partition("="))
            if not eq:
                raise _bad(name, f"parameter {item.strip()!r} is not key=value")
            if key in params:
                raise _bad(name, f"parameter {key!r} given twice")
            params[key] = _keyword(name, info, key, value)
    if info.name == "NumRet" and "rel" in params:  # ir-measures: NumRet(rel=L) is NumRelRet
        info = FAMILIES["NumRelRet"]
    cutoff: int | None = None
    recall: float | None = None
    if match["cutoff"] is not None:
        if info.cutoff is Cutoff.NONE:
            raise _bad(name, f"{info.name} takes no cut-off")
        cutoff, recall = _cut(name, info, match["cutoff"].strip())
    elif info.cutoff in (Cutoff.REQUIRED, Cutoff.RECALL):
        example = f"{info.name}@0.1" if info.cutoff is Cutoff.RECALL else f"{info.name}@10"
        raise _bad(name, f"{info.name} needs a cut-off, e.g. {example}")
    return replace(_spec(name, info, params), cutoff=cutoff, recall=recall)


def _cut_specs(
    name: str, trec_family: str, cuts: Iterable[tuple[int | None, float | None]]
) -> list[MeasureSpec]:
    """One spec per cut-off, sorted, under trec_eval's printed names (``%s_%ld``, ``%s_%3.2f``)."""
    info = _TREC_CUT_FAMILIES[trec_family]
    keyed = sorted((float(c if c is not None else r or 0.0), c, r) for c, r in cuts)
    if len({key for key, _, _ in keyed}) != len(keyed):
        raise _bad(name, "a cut-off is given twice")
    return [
        MeasureSpec(
            name=f"{trec_family}_{r:3.2f}" if r is not None else f"{trec_family}_{c}",
            family=info.name,
            cutoff=c,
            recall=r,
        )
        for _, c, r in keyed
    ]


def _defaults(info: FamilyInfo) -> list[tuple[int | None, float | None]]:
    if info.cutoff is Cutoff.RECALL:
        return [(None, value) for value in info.trec_defaults]
    return [(int(value), None) for value in info.trec_defaults]


def _parse_trec(name: str) -> list[MeasureSpec] | None:
    """trec_eval spellings, or None when the name is not one."""
    if name == "official":
        return [spec for part in _OFFICIAL for spec in _parse_trec(part) or []]
    if name in _TREC_CUT_FAMILIES:  # a bare family: trec_eval's default cut-offs
        return _cut_specs(name, name, _defaults(_TREC_CUT_FAMILIES[name]))
    if name in _BY_TREC_NAME:
        return [_spec(name, _BY_TREC_NAME[name], {})]
    for trec_family, info in _TREC_CUT_FAMILIES.items():  # printed: P_10, iprec_at_recall_0.10
        rest = name[len(trec_family) + 1 :]
        if name.startswith(trec_family + "_") and rest[:1] in _CUT_START:
            return [replace(_cut_specs(name, trec_family, [_cut(name, info, rest)])[0], name=name)]
    if name.startswith("set_F_") and name[6:7] in _CUT_START:
        beta = _keyword(name, FAMILIES["SetF"], "beta", name[len("set_F_") :])
        return [_spec(name, FAMILIES["SetF"], {"beta": beta})]
    if name.startswith("rbp_p="):
        p = _keyword(name, FAMILIES["RBP"], "p", name[len("rbp_p=") :])
        return [_spec(name, FAMILIES["RBP"], {"p": p})]
    family, dot, params = name.partition(".")
    if dot:  # trec_eval's -m syntax: family.parameters
        if family in _TREC_CUT_FAMILIES:
            info = _TREC_CUT_FAMILIES[family]
            return _cut_specs(name, family, [_cut(name, info, t) for t in params.split(",")])
        if family == "set_F":
            beta = _keyword(name, FAMILIES["SetF"], "beta", params)
            return [_spec(f"set_F_{params}", FAMILIES["SetF"], {"beta": beta})]
        if family == "rbp":
            key, eq, value = params.partition("=")
            if key != "p" or not eq:
                raise _bad(name, "rbp takes one parameter, p=VALUE (e.g. rbp.p=0.8)")
            p = _keyword(name, FAMILIES["RBP"], "p", value)
            return [_spec(f"rbp_{params}", FAMILIES["RBP"], {"p": p})]
        if family in _BY_TREC_NAME:
            raise _bad(name, f"trec_eval measure {family!r} takes no parameters here")
    return None


def parse_measure_names(names: Iterable[str] | str) -> list[MeasureSpec]:
    """Parse and validate measure names (see the module doc for the accepted spellings).

    Args:
        names: One name or several. A name given twice is kept once, at its first place.

    Returns:
        The specs in the given order (a bare trec_eval family expands in place).

    Raises:
        InputDataError: no name, an empty or unknown name, a bad cut-off or parameter, or two
            different measures that would be reported under the same name.
    """
    if isinstance(names, str):
        names = [names]
    specs: dict[str, MeasureSpec] = {}
    for raw in names:
        if not isinstance(raw, str):
            raise InputDataError(f"a measure name must be a string, got {raw!r}")
        name = raw.strip()
        if not name:
            raise InputDataError("empty measure name")
        parsed = _parse_trec(name)
        if parsed is None:
            spec = _parse_ir(name)
            if spec is None:
                raise _unknown(name)
            parsed = [spec]
        for spec in parsed:
            known = specs.setdefault(spec.name, spec)
            if known != spec:
                raise _bad(raw, f"reported as {spec.name!r}, like a different measure given before")
    if not specs:
        raise InputDataError("no measure given")
    return list(specs.values())


def measure_help(width: int = 100) -> str:
    """A table of every measure family with both spellings, for ``probrank eval --help``.

    Args:
        width: Wrap the table at this many characters.
    """
    left = 24
    lines = [f"  {'ir-measures syntax':<{left}}{'trec_eval names':<{left}}meaning"]
    for info in FAMILIES.values():
        extra = sorted(info.params - {"rel"})
        ir = info.name + (f"({','.join(p + '=' for p in extra)})" if extra else "")
        if info.cutoff is Cutoff.REQUIRED:
            ir = f"{ir}@k"
        elif info.cutoff is Cutoff.OPTIONAL:
            ir = f"{ir}, {ir}@k"
        elif info.cutoff is Cutoff.RECALL:
            ir = f"{ir}@r"
        trec: list[str] = []
        if info.trec_name and info.cutoff is Cutoff.RECALL:
            trec.append(f"{info.trec_name}_r")
        elif info.trec_name and info.cutoff is Cutoff.REQUIRED:
            trec.append(f"{info.trec_name}_k")
        elif info.trec_name:
            trec.append(info.trec_name)
        if info.trec_cut_name:
            trec.append(f"{info.trec_cut_name}_k")
        meaning = textwrap.wrap(info.description, max(width - 2 - 2 * left, 30))
        lines.append(f"  {ir:<{left - 1}} {', '.join(trec) or '-':<{left - 1}} {meaning[0]}")
        lines.extend(" " * (2 + 2 * left) + more for more in meaning[1:])
    lines.append(
        "  Every measure that follows -l also takes rel=L, that measure's own level: P(rel=2)@10."
    )
    return "\n".join(lines)
