"""probrank.acquisition."""
