"""The bottom layer: the keyed work unit, the keyed random generators, a row's identity and its
exported form. Imports nothing of ours above it.
"""
