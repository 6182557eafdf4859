"""Diagnostics: posterior draws to ArviZ, summaries with R-hat and ESS."""

from probrank.diagnostics.arviz import output_layer_dims, summary, to_inference_data

__all__ = ["output_layer_dims", "summary", "to_inference_data"]
