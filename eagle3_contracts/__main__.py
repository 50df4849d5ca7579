"""``python -m eagle3_contracts``: same as the ``eagle3-contracts`` command."""

import sys

from .cli import main

sys.exit(main())
