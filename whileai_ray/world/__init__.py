"""The mock world an agent acts in: tool calls checked against their schemas, entities and
records, injected faults, and ``current_rollout()`` for user tools (``execute=``).
"""
