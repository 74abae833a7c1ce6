"""`python -m medprobe.cli ...` (what `accelerate launch -m medprobe.cli` runs)."""

import sys

from medprobe.cli import main

sys.exit(main())
