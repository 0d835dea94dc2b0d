"""The caller's side of a run: start or join Ray, send the job, play the caller's own pool,
keep warm actors between runs, and decide which callables may travel to actors.
"""
