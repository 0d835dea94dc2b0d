"""Situations: the grid of cells a run covers and the text of each ask (template or LLM writer),
with its phrasings, mutations, probes and near-copy checks. Pure functions of the keyed unit.
"""
