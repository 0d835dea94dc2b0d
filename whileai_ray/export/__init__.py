"""From graded rows to training data: select, export, push.

* ``select(rows, mode=None | "sft" | "rl", ...)`` -> ``Selection`` (gated rows + a printable report)
* ``training_set(rows, system_prompt, tools, output=None, ...)`` -> export report (chat JSONL / Parquet)
* ``push(rows, meta, name, store=None, ...)`` -> registry entry; ``load_pushed(name_or_id)`` -> (rows, meta)
* ``export_dataset(source, output=None, ...)`` -> export report (every row given, gated; no selection)
* ``sft_rows(rows, failures_only=True)`` -> failure rows as preference-pair seeds
* ``hack_scan(rows, endorsed=())`` -> what best explains the reward
"""
from .dataset_export import export_dataset
from .hack_scan import hack_scan
from .push import PublishGateError, list_datasets, load_pushed, publish_gate, push, refuse_hosted_arguments
from .selection import Selection, select, training_set
from .sft import sft_rows
from .training import (export_training, read_training_file, record_to_conversation, roundtrip_check,
                       training_records, validate_record, write_training_jsonl, write_training_parquet)

__all__ = ["PublishGateError", "Selection", "export_dataset", "export_training", "hack_scan", "list_datasets", "load_pushed",
           "publish_gate", "push", "read_training_file", "refuse_hosted_arguments", "record_to_conversation", "roundtrip_check",
           "select", "sft_rows", "training_records", "training_set", "validate_record",
           "write_training_jsonl", "write_training_parquet"]
