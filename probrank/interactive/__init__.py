"""probrank.interactive."""
