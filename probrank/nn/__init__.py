"""probrank.nn."""
