"""The Grafana dashboard in cluster/grafana/: it parses, it is what its builder writes, it follows
Ray's dashboard convention, and every series it queries is one the metrics recorder defines."""
import importlib.util
import json
import re
from pathlib import Path

from whileai_ray.runtime.metrics.names import METRICS, prometheus_series

GRAFANA = Path(__file__).resolve().parents[4] / "cluster" / "grafana"
DASHBOARD = GRAFANA / "whileai_ray_grafana_dashboard.json"
SERIES = re.compile(r"\bray_whileai_[a-z_]+\b")


def _queries(board: dict) -> list:
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    return exprs + [v["query"]["query"] for v in board["templating"]["list"] if v["type"] == "query"]


def test_the_dashboard_parses_and_is_what_its_builder_writes():
    board = json.loads(DASHBOARD.read_text())
    spec = importlib.util.spec_from_file_location("build_dashboard", GRAFANA / "build_dashboard.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    assert DASHBOARD.read_text() == builder.render(), "run python cluster/grafana/build_dashboard.py"
    assert board["uid"] and board["title"] and board["panels"]


def test_every_queried_series_is_one_the_recorder_defines_and_every_metric_is_shown():
    board = json.loads(DASHBOARD.read_text())
    defined = {s for m in METRICS for s in prometheus_series(m)}
    queried = {s for q in _queries(board) for s in SERIES.findall(q)}
    assert queried and queried <= defined, sorted(queried - defined)
    shown = {m.name for m in METRICS if set(prometheus_series(m)) & queried}
    assert shown == {m.name for m in METRICS}


def test_it_follows_rays_dashboard_convention_and_filters_by_run():
    board = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert {"window", "SessionName", "RunId", "Mode"} <= set(variables)
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == "${datasource}"
        for target in panel["targets"]:
            assert 'run_id=~"$RunId"' in target["expr"] and 'SessionName=~"$SessionName"' in target["expr"]
            assert target["expr"].count("(") == target["expr"].count(")")


def test_every_label_a_panel_groups_by_is_one_its_metric_carries():
    board = json.loads(DASHBOARD.read_text())
    tags = {s: set(m.tags) | ({"le"} if m.kind == "histogram" else set())
            for m in METRICS for s in prometheus_series(m)}
    for expr in _queries(board):
        for part in re.split(r"\s/\s", expr):           # a ratio groups each side on its own
            names = set(SERIES.findall(part))
            for group in re.findall(r"by \(([^)]*)\)", part):
                labels = {g.strip() for g in group.split(",")}
                for name in names:
                    assert labels <= tags[name], (expr, name, labels - tags[name])


def test_it_has_rays_cluster_variable_and_every_query_filters_by_it():
    """Ray's own dashboards filter by ``ray_io_cluster=~"$Cluster"`` (KubeRay's PodMonitor sets the
    label per cluster): with one Prometheus over two clusters, ours must not sum them together."""
    board = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    cluster = variables["Cluster"]
    assert cluster["type"] == "query" and cluster["datasource"] == "${datasource}"
    assert re.fullmatch(r"label_values\(ray_whileai_[a-z_]+, ray_io_cluster\)", cluster["query"]["query"])
    assert cluster["includeAll"] and cluster["allValue"] == ".*"     # All matches a cluster without the label
    names = [v["name"] for v in board["templating"]["list"]]
    assert names.index("Cluster") < names.index("SessionName")        # the others narrow by it
    for name in ("SessionName", "RunId", "Mode"):
        assert 'ray_io_cluster=~"$Cluster"' in variables[name]["query"]["query"], name
    targets = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert targets
    for expr in targets:                                             # every selector, not one per expression
        for selector in re.findall(r"ray_whileai_[a-z_]+\{([^}]*)\}", expr):
            assert 'ray_io_cluster=~"$Cluster"' in selector, expr
