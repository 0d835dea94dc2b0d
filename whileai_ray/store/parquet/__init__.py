"""Rows as Parquet: the run's Parquet copy (parts, compaction), spills, and the lazy reader.
"""
