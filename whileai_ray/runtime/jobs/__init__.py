"""Ray Jobs: what ``whileai-ray submit`` and ``status`` send to a cluster, and its auth token.
"""
