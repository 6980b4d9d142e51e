"""``python -m xlapy``: the command-line tools."""
import sys

from .tools.cli import main

sys.exit(main())
