"""Dataset loaders: real public data sets (read in place) and generated defaults."""
