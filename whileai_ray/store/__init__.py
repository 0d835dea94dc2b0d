"""Files: the checkpoint, Parquet copies and spills, planner snapshots, shards. A leaf: no
playing, searching, scoring or result logic (import-linter contract).
"""
