"""Row shards on shared storage: rollout actors write rows, the checkpoint keeps stubs.
"""
