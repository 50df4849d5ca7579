"""``python -m eagle3_contracts``: same as the ``eagle3-contracts`` command."""

import sys

from eagle3_contracts.cli import main

sys.exit(main())
