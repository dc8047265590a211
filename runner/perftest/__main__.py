"""``python3 -m perftest`` (with runner/ on sys.path) runs the CLI."""

import sys

from .cli import main

sys.exit(main())
