"""Everything ``simulate()`` is given, checked before any budget is spent: arguments, rules, tools,
advanced knobs, roles (who plays, writes, judges), run spec files, and the shared defaults.
"""
