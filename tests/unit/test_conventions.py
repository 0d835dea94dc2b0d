"""The conventions a Python user expects of a package: ``whileai-ray --version``, ``python -m
whileai_ray``, a ``py.typed`` that ships in the build with typed lazy exports, a ``requires-python``
the code keeps, installed dependencies within the declared floors, and messages from the runtime
through ``logging`` (never ``print``, which a user can neither silence nor route)."""
import ast
import importlib.metadata
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import whileai_ray
from whileai_ray.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "whileai_ray"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_version_flag_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"whileai-ray {whileai_ray.__version__}"
    assert whileai_ray.__version__ == PYPROJECT["project"]["version"]


def test_python_m_whileai_ray_is_the_command():
    def run(*argv):
        return subprocess.run([sys.executable, "-m", "whileai_ray", *argv], cwd=REPO, env=_env(),
                              capture_output=True, text=True, timeout=120)
    helped = run("--help")
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert helped.stdout.startswith("usage: whileai-ray") and "--version" in helped.stdout
    for command in ("demo", "run", "report", "submit", "status", "bench"):
        assert command in helped.stdout
    version = run("--version")
    assert (version.returncode, version.stdout.strip()) == (0, f"whileai-ray {whileai_ray.__version__}")
    bad = run("no-such-command")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_py_typed_is_in_the_package_and_in_what_setuptools_builds(tmp_path):
    assert (PACKAGE / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["whileai_ray"]
    src = tmp_path / "src"                     # a copy: the build writes an egg-info beside pyproject.toml
    src.mkdir()
    shutil.copy(REPO / "pyproject.toml", src)
    shutil.copy(REPO / "README.md", src)
    shutil.copytree(PACKAGE, src / "whileai_ray", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py",
                            "--build-lib", str(tmp_path / "out")], cwd=src, capture_output=True, text=True,
                           timeout=120)
    assert built.returncode == 0, built.stderr[-2000:]
    assert (tmp_path / "out" / "whileai_ray" / "py.typed").is_file()


def _type_checking_imports(tree: ast.Module) -> dict:
    """``{exported name: (module, attribute)}`` of the imports under ``if ...TYPE_CHECKING:``."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.unparse(imp)
                for alias in imp.names:
                    found[alias.asname or alias.name] = ("." * imp.level + (imp.module or ""), alias.name)
    return found


def test_every_lazy_export_has_a_type_checking_import_of_the_same_object():
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    typed = _type_checking_imports(tree)
    assert typed == whileai_ray._LAZY            # same names, same module, same attribute (aliases too)
    assert not {"TYPE_CHECKING", "typing"} & {n for n in dir(whileai_ray) if not n.startswith("_")}


def test_the_type_checking_block_never_runs_so_import_stays_light():
    code = ("import sys, whileai_ray; "
            "print(sorted(m for m in ('ray', 'pyarrow', 'whileai_ray.simulation', 'whileai_ray.result.data') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=_env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def _floor(spec: str) -> Version:
    return min(Version(s.version) for s in SpecifierSet(spec) if s.operator in (">=", "=="))


def _tomllib_imports() -> list:
    """``(module path, import node, guarded)`` for each ``import tomllib`` in the package; guarded:
    inside an ``if sys.version_info >= (3, 11)`` whose else branch imports ``tomli``."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        guarded = set()
        for node in ast.walk(tree):
            if (isinstance(node, ast.If) and "version_info" in ast.unparse(node.test)
                    and any(isinstance(n, ast.Import) and n.names[0].name == "tomli" for n in node.orelse)):
                guarded |= {id(n) for n in node.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name == "tomllib" for a in node.names):
                out.append((path.relative_to(REPO).as_posix(), node.lineno, id(node) in guarded))
    return out


def test_requires_python_is_true_for_the_toml_parser():
    floor = _floor(PYPROJECT["project"]["requires-python"])
    imports = _tomllib_imports()
    assert imports, "the run spec reader parses TOML"
    if floor >= Version("3.11"):
        return
    unguarded = [(p, line) for p, line, guarded in imports if not guarded]
    assert unguarded == [], f"tomllib is Python 3.11+, requires-python says {floor}: fall back to tomli"
    tomli = [Requirement(r) for r in PYPROJECT["project"]["dependencies"] if Requirement(r).name == "tomli"]
    assert tomli, "Python < 3.11 needs the tomli dependency"
    marker = tomli[0].marker
    assert marker is not None
    assert marker.evaluate({"python_version": "3.10"}) and not marker.evaluate({"python_version": "3.11"})


def test_installed_dependencies_are_within_the_declared_floors():
    """What this suite runs against is inside what the package claims (a floor raised past the
    tested environment, or an environment below a floor, fails here)."""
    checked = 0
    for line in PYPROJECT["project"]["dependencies"]:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate():
            continue
        installed = Version(importlib.metadata.version(req.name))
        assert req.specifier.contains(installed, prereleases=True), (req.name, str(installed), str(req.specifier))
        checked += 1
    assert checked >= 8


def _print_uses(path: Path) -> list:
    tree = ast.parse(path.read_text())
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Name) and node.id == "print" and isinstance(node.ctx, ast.Load)]


def test_the_runtime_says_things_through_logging_never_print():
    """Calls and references alike (``log=print`` as a default is a print too)."""
    runtime = sorted((PACKAGE / "runtime").rglob("*.py"))
    assert len(runtime) > 10
    found = {p.name: lines for p in runtime if (lines := _print_uses(p))}
    assert found == {}, f"route these through logging.getLogger(__name__): {found}"


def test_the_finder_finds_a_print(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f(log=print):\n    print('x')\n")
    assert _print_uses(sample) == [1, 2]


def test_a_runtime_warning_reaches_the_whileai_ray_runtime_logger(caplog):
    from whileai_ray.runtime.metrics import recorder as metrics
    line = "whileai_ray: metrics test line seen once"
    with caplog.at_level(logging.WARNING, logger="whileai_ray.runtime"):
        metrics._said_once(line)
        metrics._said_once(line)
    said = [r for r in caplog.records if r.getMessage() == line]
    assert len(said) == 1 and said[0].name.startswith("whileai_ray.runtime") and said[0].levelno == logging.WARNING
