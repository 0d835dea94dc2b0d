"""The runtime's side of ``result/cluster.py``: the ``Cluster`` a result is handed.

``simulation.py`` (the composition point above ``result/`` and ``runtime/``) gives a
``RayCluster()`` to every result it makes or loads; the result calls it to grade past
``advanced={"cluster_grade_rows": ...}`` rows (``grading.py``) and for ``to_ray_dataset()``
(``interop.py``). It holds no state, so it copies and pickles with the result, and ``ray`` is
imported on the first call only: ``import whileai_ray.simulation`` stays free of it.
"""
from __future__ import annotations

__all__ = ["RayCluster"]


class RayCluster:
    """Grading on the cluster and Ray Data datasets, through this process's Ray (``ensure_ray``)."""

    def map_row_batches(self, files, make_fn, to_table, *, parent=None, user_code=()):
        from .grading import map_row_batches
        return map_row_batches(files, make_fn, to_table, parent=parent, user_code=user_code)

    def to_ray_dataset(self, files=None, table=None, keep=None):
        from .interop import to_ray_dataset
        return to_ray_dataset(files=files, table=table, keep=keep)

    def __repr__(self) -> str:
        return "RayCluster()"

    def __eq__(self, other) -> bool:
        return isinstance(other, RayCluster)

    def __hash__(self) -> int:
        return 0
