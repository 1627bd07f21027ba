"""``python -m flexq.cli``: the ``flexq`` command without its console script."""

import sys

from flexq.cli.main import main

sys.exit(main())
