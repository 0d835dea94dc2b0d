"""The layout's rules, as a newcomer reads them in the README: one concept a folder, imports
pointing down, no cycles, small modules, a light ``import whileai_ray``, and no Ray in unit tests.
(The layer contracts themselves are checked by ``lint-imports``; see pyproject.toml.)"""
import pathlib
import subprocess
import sys

import grimp
import pytest

import whileai_ray

PACKAGE = pathlib.Path(whileai_ray.__file__).parent


def _cycles(graph_edges: dict) -> list:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph_edges):
        if root in index:
            continue
        work = [(root, iter(sorted(graph_edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph_edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


@pytest.fixture(scope="module")
def graph():
    # every import counts, those inside functions too (they used to hide 88 cycles' worth of edges)
    return grimp.build_graph("whileai_ray", exclude_type_checking_imports=True)


def test_no_module_level_import_cycle(graph):
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m) if i.startswith("whileai_ray")}
             for m in graph.modules}
    assert _cycles(edges) == []


def test_no_package_level_import_cycle(graph):
    def folder(module):
        parts = module.split(".")
        return ".".join(parts[:2])
    edges: dict = {}
    for m in graph.modules:
        if m == "whileai_ray":                      # the re-exporting __init__ sits above everything
            continue
        for i in graph.find_modules_directly_imported_by(m):
            if i.startswith("whileai_ray.") and folder(i) != folder(m):
                edges.setdefault(folder(m), set()).add(folder(i))
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_import_whileai_ray_loads_neither_ray_nor_pyarrow():
    code = ("import sys, whileai_ray; "
            "print(sorted(m for m in ('ray', 'pyarrow', 'openai', 'httpx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_top_level_holds_only_entry_points():
    files = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert files == ["__init__.py", "__main__.py", "cli.py", "errors.py", "simulation.py"]


def test_no_module_over_400_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def test_a_unit_test_cannot_start_ray():
    from whileai_ray.runtime.cluster import ensure_ray
    with pytest.raises(RuntimeError, match="move this test to tests/ray/"):
        ensure_ray()


def test_the_top_level_holds_only_what_the_project_fixes():
    """pyproject.toml, whileai_ray/, cluster/, tests/, notebooks/, README.md and .ci/ (plus
    .gitignore): nothing else is committed at the top (the README's picture lives in notebooks/)."""
    root = PACKAGE.parent
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout
    top = {line.split("/", 1)[0] for line in tracked.splitlines() if line}
    assert top and top <= {"pyproject.toml", "whileai_ray", "cluster", "tests", "notebooks", "README.md", ".ci",
                           ".gitignore"}, sorted(top)


def _modules():
    """Every module of the package but ``__init__`` files, as paths."""
    return [p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" and "__pycache__" not in p.parts]


def test_no_folder_holds_more_than_16_modules():
    """A folder is one concept; past 16 modules it holds several, and gets sub-packages."""
    folders: dict = {}
    for p in _modules():
        folders.setdefault(str(p.parent.relative_to(PACKAGE.parent)), []).append(p.name)
    crowded = {f: len(names) for f, names in folders.items() if len(names) > 16}
    assert crowded == {}


def test_few_modules_are_tiny():
    """At most 15% of modules under 40 lines: the 400-line cap is kept by concepts, not by splitting."""
    sizes = [len(p.read_text().splitlines()) for p in _modules()]
    tiny = sum(n < 40 for n in sizes)
    assert tiny <= 0.15 * len(sizes), f"{tiny} of {len(sizes)} modules are under 40 lines"


def test_every_package_says_what_it_owns():
    """Each package's ``__init__`` opens with a docstring a newcomer reads first."""
    import ast
    silent = [str(p.parent.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("__init__.py")
              if "__pycache__" not in p.parts and not ast.get_docstring(ast.parse(p.read_text()))]
    assert silent == []


def test_unit_test_folders_mirror_the_packages():
    """``tests/unit/store/checkpoint/`` tests ``whileai_ray/store/checkpoint/``: every unit-test
    folder names a package, so a module's tests are found where the module is."""
    unit = pathlib.Path(__file__).resolve().parent
    folders = {p.parent.relative_to(unit) for p in unit.rglob("test_*.py")} - {pathlib.Path(".")}
    assert folders, "no unit-test folders"
    strays = sorted(str(f) for f in folders if not (PACKAGE / f / "__init__.py").is_file())
    assert strays == []
