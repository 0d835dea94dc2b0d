"""Grading after the run: ``data.grade(...)``, ``evaluate``, ``run_judge`` and ``ScoredData``.
"""
