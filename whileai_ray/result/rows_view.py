"""RowList: the list ``data.rows`` returns; also callable, so ``data.rows()`` works too."""
from __future__ import annotations

from ..core.rows import export_row


class RowList(list):
    """A list of exported rows that carries the run's ``system_prompt`` and ``tools``, and each
    row's ``privileged`` block beside it (``privileged[i]``, never in the row itself), so that
    ``simulate(tasks=data.rows())`` replays the same expected outcomes and hidden state."""

    system_prompt: str = ""
    tools: list = []
    privileged: list = []

    def __call__(self) -> "RowList":
        return self


class RowsView:
    """Shared by SimulationData and ScoredData: ``rows`` exports ``trajectories`` once (cached
    until they change), ``len()`` and iteration go over the trajectories themselves."""

    @property
    def rows(self) -> RowList:
        """The exported rows (also callable: ``data.rows()``)."""
        if self._rows_cache is None or len(self._rows_cache) != len(self.trajectories):
            rl = RowList(export_row(t) for t in self.trajectories)
            rl.system_prompt = self.system_prompt
            rl.tools = self.tools
            rl.privileged = [t.get("privileged") for t in self.trajectories]
            self._rows_cache = rl
        return self._rows_cache

    def _touch(self) -> None:
        self._rows_cache = None

    def __len__(self) -> int:
        return len(self.trajectories)

    def __iter__(self):
        return iter(self.trajectories)
