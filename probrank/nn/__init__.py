"""Layers and heads: the parts the reference models are built from.

* :mod:`~probrank.nn.bayesian_linear`: ``BayesianLinear`` (Pyro priors, flipout / local
  reparameterisation, ``sample()`` and ``predictive()``);
* :mod:`~probrank.nn.spectral`: spectral normalisation; :mod:`~probrank.nn.rff_gp`: the
  random-Fourier-feature GP output layer with its Laplace posterior;
* :mod:`~probrank.nn.heads`: the five relevance heads of the GPF comparison (deterministic,
  MC dropout, ensemble, SNGP, GPF) and :mod:`~probrank.nn.mc_dropout`, whole-function MC
  dropout; :mod:`~probrank.nn.calibration`: mean-field factor and temperature;
* :mod:`~probrank.nn.siamese`: the interactive ranker's Siamese utility network and its pair
  training; :mod:`~probrank.nn.losses`: focal and BCE losses; :mod:`~probrank.nn.training`:
  the shared training loop pieces (early stopping); :mod:`~probrank.nn.mvn`: low-rank
  Gaussians over candidates.

Names are imported from their modules on first use (``import probrank.nn`` loads no torch).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probrank.nn.bayesian_linear import (
        BayesianLinear,
        Estimator,
        Prior,
    )
    from probrank.nn.calibration import (
        DEFAULT_MEAN_FIELD_FACTORS,
        Calibration,
        CalibrationChoice,
        calibrated_nll,
        fit_temperature,
        select_calibration,
    )
    from probrank.nn.heads import (
        POINT_MASS_VARIANCE,
        DeepEnsembleHead,
        FitSettings,
        GPFHead,
        HeadKind,
        MCDropoutHead,
        MLPHead,
        PrecisionUpdate,
        RelevanceHead,
        SNGPHead,
        build_head,
    )
    from probrank.nn.losses import (
        LossKind,
        binary_focal_loss,
        check_focal_gamma,
        make_loss,
    )
    from probrank.nn.mc_dropout import (
        dropout_masks,
        dropout_widths,
        forward_with_masks,
    )
    from probrank.nn.mvn import (
        low_rank_mvn,
        sample_mvn,
    )
    from probrank.nn.rff_gp import (
        LaplaceLinear,
        MomentumForm,
        OutputLikelihood,
        RandomFourierFeatures,
        RFFGaussianProcess,
        mean_field_probability,
    )
    from probrank.nn.siamese import (
        Activation,
        PairFitResult,
        PairFitSettings,
        SiameseUtilityNet,
        UtilityHead,
        UtilityPrefix,
        fit_pairs,
        graded_pairs,
        margin_ranking_loss,
        pairwise_accuracy,
    )
    from probrank.nn.spectral import (
        BoundedSpectralNorm,
        spectral_normalize,
    )
    from probrank.nn.training import (
        Direction,
        EarlyStopping,
        HeadTrainer,
        train_head,
    )

__all__ = [
    "DEFAULT_MEAN_FIELD_FACTORS",
    "POINT_MASS_VARIANCE",
    "Activation",
    "BayesianLinear",
    "BoundedSpectralNorm",
    "Calibration",
    "CalibrationChoice",
    "DeepEnsembleHead",
    "Direction",
    "EarlyStopping",
    "Estimator",
    "FitSettings",
    "GPFHead",
    "HeadKind",
    "HeadTrainer",
    "LaplaceLinear",
    "LossKind",
    "MCDropoutHead",
    "MLPHead",
    "MomentumForm",
    "OutputLikelihood",
    "PairFitResult",
    "PairFitSettings",
    "PrecisionUpdate",
    "Prior",
    "RFFGaussianProcess",
    "RandomFourierFeatures",
    "RelevanceHead",
    "SNGPHead",
    "SiameseUtilityNet",
    "UtilityHead",
    "UtilityPrefix",
    "binary_focal_loss",
    "build_head",
    "calibrated_nll",
    "check_focal_gamma",
    "dropout_masks",
    "dropout_widths",
    "fit_pairs",
    "fit_temperature",
    "forward_with_masks",
    "graded_pairs",
    "low_rank_mvn",
    "make_loss",
    "margin_ranking_loss",
    "mean_field_probability",
    "pairwise_accuracy",
    "sample_mvn",
    "select_calibration",
    "spectral_normalize",
    "train_head",
]

_HOMES = {
    "DEFAULT_MEAN_FIELD_FACTORS": "probrank.nn.calibration",
    "POINT_MASS_VARIANCE": "probrank.nn.heads",
    "Activation": "probrank.nn.siamese",
    "BayesianLinear": "probrank.nn.bayesian_linear",
    "BoundedSpectralNorm": "probrank.nn.spectral",
    "Calibration": "probrank.nn.calibration",
    "CalibrationChoice": "probrank.nn.calibration",
    "DeepEnsembleHead": "probrank.nn.heads",
    "Direction": "probrank.nn.training",
    "EarlyStopping": "probrank.nn.training",
    "Estimator": "probrank.nn.bayesian_linear",
    "FitSettings": "probrank.nn.heads",
    "GPFHead": "probrank.nn.heads",
    "HeadKind": "probrank.nn.heads",
    "HeadTrainer": "probrank.nn.training",
    "LaplaceLinear": "probrank.nn.rff_gp",
    "LossKind": "probrank.nn.losses",
    "MCDropoutHead": "probrank.nn.heads",
    "MLPHead": "probrank.nn.heads",
    "MomentumForm": "probrank.nn.rff_gp",
    "OutputLikelihood": "probrank.nn.rff_gp",
    "PairFitSettings": "probrank.nn.siamese",
    "PairFitResult": "probrank.nn.siamese",
    "PrecisionUpdate": "probrank.nn.heads",
    "Prior": "probrank.nn.bayesian_linear",
    "RFFGaussianProcess": "probrank.nn.rff_gp",
    "RandomFourierFeatures": "probrank.nn.rff_gp",
    "RelevanceHead": "probrank.nn.heads",
    "SNGPHead": "probrank.nn.heads",
    "SiameseUtilityNet": "probrank.nn.siamese",
    "UtilityHead": "probrank.nn.siamese",
    "UtilityPrefix": "probrank.nn.siamese",
    "binary_focal_loss": "probrank.nn.losses",
    "build_head": "probrank.nn.heads",
    "calibrated_nll": "probrank.nn.calibration",
    "check_focal_gamma": "probrank.nn.losses",
    "dropout_masks": "probrank.nn.mc_dropout",
    "dropout_widths": "probrank.nn.mc_dropout",
    "fit_pairs": "probrank.nn.siamese",
    "fit_temperature": "probrank.nn.calibration",
    "forward_with_masks": "probrank.nn.mc_dropout",
    "graded_pairs": "probrank.nn.siamese",
    "low_rank_mvn": "probrank.nn.mvn",
    "make_loss": "probrank.nn.losses",
    "margin_ranking_loss": "probrank.nn.siamese",
    "mean_field_probability": "probrank.nn.rff_gp",
    "pairwise_accuracy": "probrank.nn.siamese",
    "sample_mvn": "probrank.nn.mvn",
    "select_calibration": "probrank.nn.calibration",
    "spectral_normalize": "probrank.nn.spectral",
    "train_head": "probrank.nn.training",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
