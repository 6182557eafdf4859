"""probrank.posteriors: BoTorch adapters over candidate-utility posteriors."""

from probrank.posteriors.candidate import low_rank_mvn, sample_mvn
from probrank.posteriors.model import CandidatePosterior, UtilityModel

__all__ = ["CandidatePosterior", "UtilityModel", "low_rank_mvn", "sample_mvn"]
