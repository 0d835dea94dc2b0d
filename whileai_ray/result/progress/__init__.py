"""What a running job says: progress lines, the bar or widget that shows them, the logger.
"""
