"""probrank.models."""
