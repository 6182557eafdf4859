"""probrank.interactive: the interaction loop, users, durable sessions and their measures."""

from probrank.interactive.bradley_terry import BradleyTerryLaplace, Link, rbf_kernel
from probrank.interactive.log import TornLogWarning, read_log
from probrank.interactive.metrics import matching_accuracy, ndcg_at_k, ranking_curves
from probrank.interactive.model import PreferenceModel
from probrank.interactive.session import InteractiveSession
from probrank.interactive.simulate import SimulationTrace, simulate
from probrank.interactive.users import (
    Response,
    SimulatedUser,
    TerminalUser,
    User,
    rouge_l_fmeasure,
    utilities_from_grades,
)

__all__ = [
    "BradleyTerryLaplace",
    "InteractiveSession",
    "Link",
    "PreferenceModel",
    "Response",
    "SimulatedUser",
    "SimulationTrace",
    "TerminalUser",
    "TornLogWarning",
    "User",
    "matching_accuracy",
    "ndcg_at_k",
    "ranking_curves",
    "rbf_kernel",
    "read_log",
    "rouge_l_fmeasure",
    "simulate",
    "utilities_from_grades",
]
