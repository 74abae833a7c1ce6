"""`python -m probers.cli ...` (what `accelerate launch -m probers.cli` runs)."""

import sys

from probers.cli import main

sys.exit(main())
