"""Planner snapshots beside a checkpoint (plain numeric data), so a resume continues the plan.
"""
