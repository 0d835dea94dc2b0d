"""The notebooks in notebooks/ run headless, top to bottom, in a fresh kernel (nbclient).

Each runs in a temporary copy (its working folder), with Ray bound to loopback
(``WHILEAI_RAY_NODE_IP=127.0.0.2``, ``RAY_AUTH_MODE=disabled``). 01 and 03 start a local Ray
through ``wai.simulate``; 02 starts a Ray head with the dashboard and stops it by its pids
(it leaves ``ray_head.json`` so this test can clean up after a failed cell too).
"""
import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path

import nbformat
import psutil
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CELL_TIMEOUT_S = 300


@pytest.fixture
def kernel_env(tmp_path, monkeypatch):
    """A kernelspec for this interpreter (so the kernel sees this environment) and the Ray env."""
    spec_dir = tmp_path / "jupyter" / "kernels" / "wai-test"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "whileai_ray tests", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("WHILEAI_RAY_NODE_IP", "127.0.0.2")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return "wai-test"


def run_notebook(path: Path, workdir: Path, kernel: str):
    """Execute a copy of ``path`` in ``workdir``; raises CellExecutionError when a cell fails."""
    copy = workdir / path.name
    shutil.copy(path, copy)
    book = nbformat.read(copy, as_version=4)
    client = NotebookClient(book, timeout=CELL_TIMEOUT_S, kernel_name=kernel,
                            resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return book


def outputs_html(book) -> str:
    return "\n".join(str(out.get("data", {}).get("text/html", "")) for cell in book.cells
                     if cell.cell_type == "code" for out in cell.get("outputs", []))


def stop_leftover_head(workdir: Path) -> list:
    """Kill (by pid) whatever the cluster notebook's Ray head left running; return those pids."""
    record = workdir / "ray_head.json"
    if not record.exists():
        return []
    head = json.loads(record.read_text())
    left = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            ours = proc.pid == head["pid"] or os.getsid(proc.pid) == head["pid"] or \
                any(head["temp_dir"] in part for part in proc.info["cmdline"] or [])
            if ours and proc.pid != os.getpid():
                if proc.status() != psutil.STATUS_ZOMBIE:
                    left.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError, PermissionError):
            pass
    for proc in left:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(left, timeout=10)
    return [p.pid for p in left]


def test_quickstart(tmp_path, kernel_env):
    book = run_notebook(NOTEBOOKS / "01_quickstart.ipynb", tmp_path, kernel_env)
    html = outputs_html(book)
    assert "wai-progress" in html            # the live progress bar was displayed
    assert "<svg" in html and "pass@4" in html
    text = "\n".join(str(out.get("text", "")) for cell in book.cells if cell.cell_type == "code"
                     for out in cell.get("outputs", []))
    # the three agent forms, each with a real openai client against the scripted server
    assert "function: 20 rows in the caller pool" in text         # the closure over the client ran here
    assert "async function: 20 rows in the caller pool" in text
    assert re.search(r"class: 20 rows on \d+ actor\(s\) in the actors pool", text)   # built on actors


def test_cluster(tmp_path, kernel_env):
    try:
        book = run_notebook(NOTEBOOKS / "02_cluster.ipynb", tmp_path, kernel_env)
    finally:
        leftovers = stop_leftover_head(tmp_path)
    assert (tmp_path / "ray_head.json").exists()
    assert leftovers == [], "the notebook left Ray head processes running"
    text = "\n".join(str(out.get("text", "")) for cell in book.cells if cell.cell_type == "code"
                     for out in cell.get("outputs", []))
    assert "submitted: run orders-notebook" in text
    assert "orders-notebook SUCCEEDED" in text


def test_grading_and_variance(tmp_path, kernel_env):
    book = run_notebook(NOTEBOOKS / "03_grading_and_variance.ipynb", tmp_path, kernel_env)
    html = outputs_html(book)
    assert "rate 0.2 (before)" in html and "<svg" in html
    text = "\n".join(str(out.get("text", "")) for cell in book.cells if cell.cell_type == "code"
                     for out in cell.get("outputs", []))
    assert "eval variance of pass_at_1 over 3 run(s)" in text and "REGRESSED: pass_at_1" in text


def test_a_failing_cell_fails_the_run(tmp_path, kernel_env):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("raise ValueError('boom')"),
                  nbformat.v4.new_code_cell("print('never')")]
    path = tmp_path / "src" / "broken.ipynb"
    path.parent.mkdir()
    nbformat.write(book, path)
    with pytest.raises(CellExecutionError, match="boom"):
        run_notebook(path, tmp_path, kernel_env)


def test_a_run_in_a_notebook_draws_the_html_bar_not_stderr_lines(tmp_path, kernel_env):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(
        "import whileai_ray as wai\n"
        "TOOLS = [{'type': 'function', 'function': {'name': 'lookup_order', 'parameters': {'type': 'object',\n"
        "          'properties': {'order_id': {'type': 'string'}}, 'required': ['order_id']}}}]\n"
        "data = wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, budget=300)\n"
        "print('ROWS', len(data.rows()))")]
    path = tmp_path / "src" / "bar.ipynb"
    path.parent.mkdir()
    nbformat.write(book, path)
    book = run_notebook(path, tmp_path, kernel_env)
    outputs = book.cells[0].outputs
    bars = [o for o in outputs if "wai-progress" in str(o.get("data", {}).get("text/html", ""))]
    assert len(bars) == 1 and "300/300 rollouts" in bars[0]["data"]["text/html"]   # drawn once, updated in place
    streams = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "ROWS 300" in streams and "rollouts, " not in streams
