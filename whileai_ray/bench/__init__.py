"""``whileai-ray bench``: the speed lines the issues quote, measured end to end.
"""
