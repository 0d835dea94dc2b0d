"""The planner: round by round, which work units to play, its state, stats and settings.
"""
