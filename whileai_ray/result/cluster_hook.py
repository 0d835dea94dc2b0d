"""How ``result/`` reaches the cluster without importing ``ray``.

Grading a large result runs on the cluster (``runtime/ray_data_grading.map_row_batches``), but
the layer rules keep ``result/`` free of ``ray`` and of ``runtime/``. ``simulation.py``, the
entry point above both, installs the runtime's function here when the package is imported;
``cluster_runner()`` returns it (None when nothing was installed: a bare import of
``whileai_ray.result`` grades in-process, as small results always do).

``dataset_maker()`` is the same arrangement for ``data.to_ray_dataset()`` (``interop.py``):
``runtime/ray_data_interop.to_ray_dataset``, installed by ``simulation.py``.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["install_cluster_runner", "cluster_runner", "install_dataset_maker", "dataset_maker"]

_RUNNER: Callable | None = None
_DATASET: Callable | None = None


def install_cluster_runner(fn: Callable | None) -> None:
    """``fn(files, make_fn, to_table, parent=None) -> (files, owner)``; None removes it."""
    global _RUNNER
    _RUNNER = fn


def cluster_runner() -> Callable | None:
    return _RUNNER


def install_dataset_maker(fn: Callable | None) -> None:
    """``fn(files=..., table=..., keep=...) -> ray.data.Dataset``; None removes it."""
    global _DATASET
    _DATASET = fn


def dataset_maker() -> Callable | None:
    return _DATASET
