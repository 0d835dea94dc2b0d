"""Judges: the judge contract, the LLM judge, its prompt, gold labels and judge comparison.
"""
