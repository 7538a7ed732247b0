"""``python -m ironloop serve ...``: the ``ironloop`` command without its script."""

import sys

from ironloop.cli import main

sys.exit(main())
