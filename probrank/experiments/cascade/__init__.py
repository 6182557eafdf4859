"""The ``cascade`` protocol."""
