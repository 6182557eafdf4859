"""probrank.interactive: the interaction loop, users, durable sessions and their measures.

The preference models a session drives live in :mod:`probrank.posteriors` (the
:class:`~probrank.posteriors.protocol.PreferenceModel` protocol, ``BradleyTerryLaplace`` and the
neural posteriors); :class:`probrank.models.InteractiveRanker` builds sessions over its own.
"""

from probrank.interactive.log import TornLogWarning, read_log
from probrank.interactive.metrics import matching_accuracy, ndcg_at_k, ranking_curves
from probrank.interactive.session import InteractiveSession
from probrank.interactive.simulate import SimulationTrace, simulate, simulate_session
from probrank.interactive.users import (
    Response,
    SimulatedUser,
    TerminalUser,
    User,
    rouge_l_fmeasure,
    utilities_from_grades,
)

__all__ = [
    "InteractiveSession",
    "Response",
    "SimulatedUser",
    "SimulationTrace",
    "TerminalUser",
    "TornLogWarning",
    "User",
    "matching_accuracy",
    "ndcg_at_k",
    "ranking_curves",
    "read_log",
    "rouge_l_fmeasure",
    "simulate",
    "simulate_session",
    "utilities_from_grades",
]
