"""``python -m ironloop serve ...``: the ``ironloop`` command without its script."""

import sys

from ironloop.cli import main

if __name__ == "__main__":
    sys.exit(main())
