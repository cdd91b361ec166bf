"""``python -m nashzoo`` runs the command line."""

import sys

from nashzoo.cli import main

sys.exit(main())
