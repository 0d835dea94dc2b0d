"""Public testing helpers: a scripted OpenAI-compatible server, seeded rows and agents, and the
headless-browser and terminal helpers the project's own tests use.
"""
