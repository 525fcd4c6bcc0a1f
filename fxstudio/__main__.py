"""`python -m fxstudio` runs the command line."""

import sys

from fxstudio.cli import main

sys.exit(main())
