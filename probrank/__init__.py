"""probrank: Bayesian relevance estimation on Pyro, GPyTorch, BoTorch and transformers."""

from probrank.exceptions import ConvergenceWarning, InputDataError, NumericsWarning, ProbrankError

__version__ = "0.1.0"

__all__ = ["ConvergenceWarning", "InputDataError", "NumericsWarning", "ProbrankError"]
