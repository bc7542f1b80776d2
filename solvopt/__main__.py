"""``python -m solvopt ...``: the ``solvopt`` command (same commands, flags and exit codes)."""
import sys

from solvopt.cli import main

if __name__ == "__main__":
    sys.exit(main())
