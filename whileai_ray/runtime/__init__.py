"""The distributed runtime: the only package that imports ``ray``. ``caller/`` runs in the
caller's process, ``driver/`` in the Driver actor, ``pools/`` in rollout and judge actors;
``jobs/``, ``servers/``, ``metrics/`` and ``data/`` are the cluster's other services.
"""
