"""Where work units are played: the pool protocol the Driver's loop sees, Ray rollout actors
(``rollout_worker.py``), the caller's own pool, judge actors, and how big each pool is.
"""
