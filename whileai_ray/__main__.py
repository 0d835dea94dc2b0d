"""``python -m whileai_ray``: the ``whileai-ray`` command, for when its script is not on PATH
(a venv not activated, a notebook's ``!python -m whileai_ray demo``, a cluster image)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
