"""The JSONL checkpoint: every landed row on disk as it lands, its lock, key index, seal,
header fingerprint and the exactly-once resume index.
"""
