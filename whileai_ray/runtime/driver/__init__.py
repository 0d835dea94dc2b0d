"""The Driver: the one actor per run that decides what to play (the planner), sends chunks to
the pools, lands what comes back (checkpoint, spool, progress) and stops the run.
``actor.py`` is the Ray actor; ``caller/run.py`` one run inside it; ``loop.py`` the plain loop.
"""
