"""What a result needs from the cluster, handed to it by whoever makes the result.

Two things a result does can run on Ray: grading a large result (Ray Data ``map_batches`` over
its Parquet files, ``grading/batch.py``) and ``data.to_ray_dataset()`` (``interop.py``). The
layer rules keep ``result/`` free of ``ray`` and of ``runtime/``, so a result does not reach
for them: it holds a ``Cluster`` in its ``_cluster`` field, given to it when it is made.
``simulate()`` and the public ``wai.load`` / ``wai.grade`` / ``wai.evaluate`` (``simulation.py``,
the composition point above both layers) pass the runtime's (``runtime/data/services.py``); a
result made from another (``dataclasses.replace``, graded copies) keeps its source's. A result
built by hand has None: it grades in-process and ``to_ray_dataset()`` says how to get one.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

if TYPE_CHECKING:
    from ..store.parquet.spill import OwnedFolder

__all__ = ["Cluster", "cluster_of"]


class Cluster(Protocol):
    """The runtime's services a result may use (``runtime/data/services.py`` implements them)."""

    def map_row_batches(self, files: Sequence[str], make_fn: Callable[[], Callable[[list], None]],
                        to_table: Callable[[list], Any], *, parent: str | None = None,
                        user_code: tuple = ()) -> tuple[list[str], OwnedFolder]:
        """``make_fn()`` over every batch of the rows in ``files``, on the cluster: the output
        part files (in the input's row order) and the folder that owns them."""
        ...

    def to_ray_dataset(self, files: Sequence[str] | None = None, table: Any = None, keep: Any = None) -> Any:
        """A lazy ``ray.data.Dataset`` over ``files`` (Parquet) or ``table`` (an Arrow table);
        ``keep``: what owns the files, held by the dataset."""
        ...


def cluster_of(source: object) -> Cluster | None:
    """The cluster a result (or anything holding one) was given; None for rows or a bare path."""
    return getattr(source, "_cluster", None)
