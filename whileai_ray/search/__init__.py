"""The coverage search: the planner, its arms, novelty, coverage and the near-copy caps.
"""
