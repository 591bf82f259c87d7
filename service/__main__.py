"""``python -m service serve``: the same as the ``gradserve`` script."""

import sys

from .cli import main

sys.exit(main())
