"""What a SimulationData can do next: grade it, rank it, check it, turn it into training data.

A mixin of thin methods over ``grading_paths`` (grading, ranking, leak and judge checks)
and ``export`` (select, training_set, push, sft_rows); each method's docstring says which
path it takes. SimulationData inherits it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..core.defaults import JUDGE_FLOORS, JUDGE_MAX_TOKENS, JUDGE_PAYLOAD_CHARS
from ..score.judge_compare import compare_judges
from .grading.paths import attach_labels_to, grade_llm, grade_run, leak_report_of, llm_grade, rank_source

if TYPE_CHECKING:
    from .row_store import Trajectories


def _export():
    """The export package, imported on first use: it loads pyarrow (~0.3 s), which
    ``import whileai_ray`` must not pay."""
    from .. import export
    return export


class RunActions:
    if TYPE_CHECKING:             # what SimulationData, which mixes this in, provides (its fields, RowsView)
        trajectories: Trajectories
        system_prompt: str
        tools: list[Any]
        search: dict[str, Any]

        def _touch(self) -> None: ...

        def meta_dict(self) -> dict[str, Any]: ...

    # ------------------------------------------------------------- grading
    def grade(self, grader=None, judge=None, llm: bool = False, llm_spec: str | None = None,
              spec: str | None = None, api_key: str | None = None, path: str | None = None,
              concurrency: int = 32, llm_concurrency: int = 16, version: str | None = None,
              use_privileged: bool = False, scale=None, rubric: str | None = None, trust: str = "warn",
              payload_chars: int = JUDGE_PAYLOAD_CHARS, max_tokens: int = JUDGE_MAX_TOKENS):
        """Grade this run's rows. ``grader=`` (a callable): scored in place, returns the run.
        ``judge=``: scored copies, returns a ``ScoredData``. Neither: the LLM judge over the
        configured OpenAI-compatible endpoint (``WHILEAI_JUDGE`` / ``configure(judge=)``),
        writing ``reward`` 0/1 and ``reason`` in place and returning the judge report."""
        out = grade_run(self, grader=grader, judge=judge, llm=llm, llm_spec=llm_spec, spec=spec, api_key=api_key,
                        path=path or None, concurrency=concurrency, llm_concurrency=llm_concurrency,
                        version=version, use_privileged=use_privileged, scale=scale, rubric=rubric, trust=trust,
                        payload_chars=payload_chars, max_tokens=max_tokens)
        self._touch()
        return out

    def grade_llm(self, spec=None, base_url=None, model=None, concurrency: int = 16, api_key=None, path=None,
                  limit=None, prompt=None, use_privileged: bool = False, rubric=None, trust: str = "warn",
                  payload_chars: int = JUDGE_PAYLOAD_CHARS, max_tokens: int = JUDGE_MAX_TOKENS):
        """Binary 0/1 grade with the LLM judge, in place; returns the judge report."""
        out = grade_llm(self, spec=spec, base_url=base_url, model=model, concurrency=concurrency, api_key=api_key,
                        path=path, limit=limit, prompt=prompt, use_privileged=use_privileged, rubric=rubric,
                        trust=trust, payload_chars=payload_chars, max_tokens=max_tokens)
        self._touch()
        return out

    def llm_grade(self, spec=None, concurrency: int = 16, api_key=None, path=None):
        """Advisory LLM pass (``llm_reward`` / ``llm_reason``); ``reward`` is left untouched."""
        out = llm_grade(self, spec, concurrency, api_key, path)
        self._touch()
        return out

    def rank(self, path: str | None = None) -> dict:
        """Offline quality scores (opener, ping_pong, leak, complexity, structure) on every row."""
        out = rank_source(self, output=path)
        self._touch()
        return out

    def leak_report(self, min_len: int = 12):
        """Did any reply quote its own ``privileged`` block? (reads the trajectories)."""
        return leak_report_of(self, min_len)

    def attach_labels(self, labels, kind: str = "human", *, annotator: str | None = None, replace: bool = False):
        """Attach gold labels (``gold_reward``) for the judge trust check and ``compare_judges``."""
        out = attach_labels_to(self, labels, kind=kind, annotator=annotator, replace=replace)
        self._touch()
        return out

    def compare_judges(self, judges: Mapping | Sequence, gold: str = "gold_reward", allow_model_gold: bool = False,
                       concurrency: int = 8, floors: tuple = JUDGE_FLOORS):
        """Grade copies with several judges and rank them against the gold labels (by kappa)."""
        return compare_judges(self.trajectories, judges, gold=gold, allow_model_gold=allow_model_gold,
                              concurrency=concurrency, policy=self.system_prompt, tools=self.tools, floors=floors)

    # ------------------------------------------------------ training data
    def select(self, mode: str | None = None, target: int = 1000, band=None, endorsed: Sequence[str] = (),
               truncated: str = "drop"):
        """The rows worth training on, as a ``Selection`` that prints what each gate dropped."""
        sel = _export().select(self.trajectories, mode, target, band, endorsed, truncated, run_meta=self)
        self.search["selection"] = sel.report
        return sel

    def training_set(self, output: str | None = None, target: int = 1000, validate: bool = True) -> dict:
        """Selected rows as OpenAI chat JSONL (or Parquet for a .parquet path); the export report.
        ``output=`` is never a run's own file (its checkpoint, sidecars or Parquet copy): refused
        before any selection work (``store/run_files.refuse_run_file``)."""
        if output is not None:
            from ..store.run_files import refuse_run_file
            refuse_run_file(output, "training_set(output=...)")
        rep = _export().training_set(self.trajectories, self.system_prompt, self.tools, output=output, target=target,
                           validate=validate)
        if rep.get("selection") is not None:
            self.search["selection"] = rep["selection"]
        return rep

    def push(self, name: str, api_key: str | None = None, parent: str | None = None, agent: str | None = None,
             publish: bool = False, description: str | None = None, gate: bool = True, purpose: str = "train",
             holdout: float | None = None, endorsed: Sequence[str] = (), strict_hacks: bool = False,
             store: str | None = None) -> dict:
        """Publish this run as a new version of dataset ``name`` in a dataset store (a local folder
        by default, ``WHILEAI_RAY_DATASETS`` or ``store=``: a path or any pyarrow filesystem URI).

        Where the docs upload to a While account, this writes to the store you configure, reached
        with that filesystem's own credentials. So ``api_key=`` and ``publish=True`` (a hosted
        account, a public catalog) raise ``ValueError`` before anything is written, never silently
        do nothing; ``agent=`` is recorded on the entry."""
        _export().refuse_hosted_arguments(api_key, publish, agent)
        return _export().push(self.trajectories, self.meta_dict(), name, store=store, parent=parent, purpose=purpose,
                    holdout=holdout, gate=gate, endorsed=endorsed, strict_hacks=strict_hacks,
                    description=description, agent=agent)

    def sft_rows(self, failures_only: bool = True) -> list:
        """Failure rows as preference-pair seeds (``rejected_response``, ``tool_trace``, ...)."""
        return _export().sft_rows(self.trajectories, failures_only)
