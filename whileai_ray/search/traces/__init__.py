"""``traces=``: how recorded traces steer a run, and what such a run reports.
"""
