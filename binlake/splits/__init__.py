"""Splits: an archive's commit-time range planned into byte ranges, and each one run as a task."""
