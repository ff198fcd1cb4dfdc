"""Click command groups contributed by parts of Edgescope (added to the main group in edgescope/cli.py)."""
