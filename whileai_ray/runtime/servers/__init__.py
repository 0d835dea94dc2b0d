"""Model servers (vLLM, llama.cpp) as Ray actors on placement-group bundles.
"""
