"""`python -m medprobe ...` is the `medprobe` command."""

import sys

from medprobe.cli import main

sys.exit(main())
