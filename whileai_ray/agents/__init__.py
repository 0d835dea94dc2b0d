"""Playing one work unit against an agent: the three agent forms (a function, an ``async def``, a
class), model backends over any OpenAI-compatible endpoint, the simulated user, the response
cache, and the row a rollout becomes. No Ray here: the runtime calls these on its lanes.
"""
