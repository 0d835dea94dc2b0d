"""Writes ``whileai_ray_grafana_dashboard.json`` next to this file (run it after changing a panel).

The dashboard follows Ray's own Grafana convention (the dashboards Ray writes under
``<session>/metrics/grafana/dashboards/``): a ``datasource`` variable of type prometheus,
a ``window`` interval for ``rate()``, a ``SessionName`` filter, graph panels in rows, and
``$datasource`` on every panel, so the file can be dropped into that folder and is provisioned
with Ray's own dashboards. Like Ray's, it has a ``Cluster`` variable over the ``ray_io_cluster``
label (KubeRay's PodMonitor sets it per cluster; one Prometheus may scrape several clusters), with
``.*`` for All so a cluster without that label still matches. Two more variables keep runs apart:
``RunId`` and ``Mode``.
``tests/unit/test_grafana_dashboard.py`` checks that the JSON is what this script writes and
that every series it queries is one ``whileai_ray/runtime/metrics/names.py`` defines.

    python cluster/grafana/build_dashboard.py
"""
from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).with_name("whileai_ray_grafana_dashboard.json")
F = 'SessionName=~"$SessionName", ray_io_cluster=~"$Cluster", run_id=~"$RunId", mode=~"$Mode"'
C = 'ray_io_cluster=~"$Cluster"'               # the variables' own queries narrow by cluster too


def _target(expr: str, legend: str, ref: str) -> dict:
    return {"exemplar": True, "expr": expr, "interval": "", "legendFormat": legend, "refId": ref}


def _graph(pid: int, title: str, description: str, targets: list, unit: str, x: int, y: int,
           stack: bool = False) -> dict:
    return {
        "id": pid, "type": "graph", "title": title, "description": description,
        "datasource": "${datasource}", "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [_target(e, legend, chr(ord("A") + i)) for i, (e, legend) in enumerate(targets)],
        "legend": {"alignAsTable": True, "avg": False, "current": True, "max": True, "min": False,
                   "show": True, "values": True, "hideEmpty": False, "hideZero": False},
        "lines": True, "linewidth": 1, "fill": 1 if not stack else 10, "stack": stack,
        "nullPointMode": "null", "pointradius": 2, "points": False, "renderer": "flot",
        "pluginVersion": "7.5.17", "options": {"alertThreshold": True}, "seriesOverrides": [],
        "thresholds": [], "timeRegions": [], "tooltip": {"shared": True, "sort": 0, "value_type": "individual"},
        "xaxis": {"mode": "time", "show": True, "values": []},
        "yaxes": [{"format": unit, "logBase": 1, "min": "0", "show": True},
                  {"format": "short", "logBase": 1, "show": True}],
        "yaxis": {"align": False},
    }


def _row(pid: int, title: str, y: int) -> dict:
    return {"id": pid, "type": "row", "title": title, "collapsed": False, "panels": [],
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}}


def _quantiles(metric: str) -> list:
    return [(f"histogram_quantile({q}, sum(rate({metric}_bucket{{{F}}}[$window])) by (run_id, le))",
             f"p{int(q * 100)} {{{{run_id}}}}") for q in (0.5, 0.95, 0.99)]


def _query_var(name: str, label: str, description: str, query: str, hide: int = 0) -> dict:
    return {"name": name, "label": label, "type": "query", "description": description,
            "datasource": "${datasource}", "definition": query,
            "query": {"query": query, "refId": "StandardVariableQuery"}, "refresh": 2, "hide": hide,
            "includeAll": True, "multi": True, "allValue": ".*", "sort": 2,
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}


def panels() -> list:
    L = "ray_whileai_rows_landed_total"
    layout = [
        ("Rows", [
            ("Rows landed per second", "Rows written to the result and the checkpoint, per second.",
             [(f"sum(rate({L}{{{F}}}[$window])) by (run_id)", "{{run_id}}")], "rows/s"),
            ("Rows landed", "Rows landed so far, per run.", [(f"sum({L}{{{F}}}) by (run_id)", "{{run_id}}")],
             "short"),
            ("Rollouts in flight and queued", "In flight: sent to rollout actors and not back yet. "
             "Queued: decided and waiting for a slot.",
             [(f"sum(ray_whileai_rollouts_inflight{{{F}}}) by (run_id)", "in flight {{run_id}}"),
              (f"sum(ray_whileai_rollouts_queued{{{F}}}) by (run_id)", "queued {{run_id}}")], "short"),
            ("Judge queue depth", "Rows sent to judge actors and not graded yet.",
             [(f"sum(ray_whileai_judge_queue{{{F}}}) by (run_id)", "{{run_id}}")], "short"),
        ]),
        ("Latency", [
            ("Rollout latency", "Seconds per rollout on its actor (every attempt).",
             _quantiles("ray_whileai_rollout_seconds"), "s"),
            ("Judge latency", "Seconds per verdict on its judge actor.", _quantiles("ray_whileai_judge_seconds"),
             "s"),
        ]),
        ("Re-rolls and losses", [
            ("Re-rolls per second by cause", "Rollouts played again: agent_error, empty_reply, tool_markup.",
             [(f"sum(rate(ray_whileai_rerolls_total{{{F}}}[$window])) by (run_id, cause)",
               "{{cause}} {{run_id}}")], "short"),
            ("Lost rollouts by cause", "Rollouts given up after their re-rolls, so far.",
             [(f"sum(ray_whileai_rollouts_lost_total{{{F}}}) by (run_id, cause)", "{{cause}} {{run_id}}")],
             "short"),
        ]),
        ("Placement and grading", [
            ("Rows per node per second", "Where rows are played: rows landed per second by node.",
             [(f"sum(rate({L}{{{F}}}[$window])) by (node)", "{{node}}")], "rows/s"),
            ("Pass rate", "Share of graded rows that passed: so far (gauge) and over the window.",
             [(f"max(ray_whileai_pass_rate{{{F}}}) by (run_id)", "so far {{run_id}}"),
              (f"sum(rate(ray_whileai_rows_passed_total{{{F}}}[$window])) by (run_id) / "
               f"sum(rate(ray_whileai_rows_graded_total{{{F}}}[$window])) by (run_id)", "window {{run_id}}")],
             "percentunit"),
        ]),
        ("Model usage", [
            ("Tokens per second", "Tokens the agent's model reported (input, output).",
             [(f"sum(rate(ray_whileai_tokens_total{{{F}}}[$window])) by (run_id, kind)", "{{kind}} {{run_id}}")],
             "short"),
            ("Cost so far", "Cost the agent's endpoint reported (usage.cost), in its own currency.",
             [(f"sum(ray_whileai_cost_total{{{F}}}) by (run_id)", "{{run_id}}")], "short"),
            ("Response cache", "Model requests answered from the response cache (hit: no model call) or "
             "sent to the model (miss), per second, by role (advanced['cache']).",
             [(f"sum(rate(ray_whileai_cache_lookups_total{{{F}}}[$window])) by (run_id, role, outcome)",
               "{{role}} {{outcome}} {{run_id}}")], "reqps"),
        ]),
    ]
    out, pid, y = [], 1, 0
    for title, graphs in layout:
        out.append(_row(pid, title, y))
        pid, y = pid + 1, y + 1
        for i, (gtitle, desc, targets, unit) in enumerate(graphs):
            out.append(_graph(pid, gtitle, desc, targets, unit, x=12 * (i % 2), y=y + 8 * (i // 2)))
            pid += 1
        y += 8 * ((len(graphs) + 1) // 2)
    return out


def dashboard() -> dict:
    window = {"name": "window", "label": "Window", "type": "interval", "query": "30s,1m,5m,15m",
              "description": "Averaging window for rate() and the latency quantiles.",
              "options": [{"selected": v == "1m", "text": v, "value": v} for v in ("30s", "1m", "5m", "15m")],
              "current": {"selected": True, "text": "1m", "value": "1m"}, "auto": False, "refresh": 2, "hide": 0}
    landed = "ray_whileai_rows_landed_total"
    return {
        "title": "whileai_ray runs", "uid": "whileaiRayDashboard", "version": 1, "schemaVersion": 27,
        "style": "dark", "editable": True, "graphTooltip": 1, "refresh": "10s",
        "time": {"from": "now-30m", "to": "now"},
        "annotations": {"list": [{"builtIn": 1, "datasource": "-- Grafana --", "enable": True, "hide": True,
                                  "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
                                  "type": "dashboard"}]},
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "refresh": 1, "hide": 2,
             "description": "Filter queries of a specific Prometheus type.", "includeAll": False,
             "multi": False, "current": {"selected": False}},
            window,
            _query_var("Cluster", "Cluster", "Filter queries to specific Ray clusters (the ray_io_cluster "
                       "label; KubeRay's PodMonitor sets it per cluster). All also matches a cluster "
                       "without the label.", f"label_values({landed}, ray_io_cluster)"),
            _query_var("SessionName", "Session", "Filter queries to specific Ray sessions.",
                       f"label_values({landed}{{{C}}}, SessionName)"),
            _query_var("RunId", "Run", "The run id (advanced={'run_id': ...}, or the spec's run id).",
                       f'label_values({landed}{{{C}, SessionName=~"$SessionName"}}, run_id)'),
            _query_var("Mode", "Mode", "simulate(mode=...): explore, rl, ...",
                       f'label_values({landed}{{{C}, SessionName=~"$SessionName"}}, mode)'),
        ]},
        "panels": panels(),
        "tags": ["whileai_ray", "ray"],
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}")
