"""Ray metrics of a run (Prometheus, Grafana): names, the recorder, and its own cost.
"""
