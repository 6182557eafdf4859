"""Moved to :mod:`probrank.models.qlfusion.plus_features`; this name keeps old imports working."""

from probrank.models.qlfusion.plus_features import (
    OVERLAP_CUTS,
    plus_feature_names,
    plus_features,
    standardize,
)

__all__ = ["OVERLAP_CUTS", "plus_feature_names", "plus_features", "standardize"]
