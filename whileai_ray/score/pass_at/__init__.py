"""pass@1, pass^k and pass@k with task-bootstrap intervals, over rows or Arrow fact columns.
"""
