"""Scoring: graders, judges, pass@k, comparisons, and the fact columns summaries read.
"""
