"""Moved to :mod:`probrank.models.multitask.mediqa_features`; this name keeps old imports
working."""

from probrank.models.multitask.mediqa_features import FeatureSet, MediqaFeaturizer, answer_domain

__all__ = ["FeatureSet", "MediqaFeaturizer", "answer_domain"]
