"""What a run hands back: SimulationData and its actions, the rows view, ScoredData, report(),
warnings, load(), grading after the run, progress lines and the notebook view.
"""
