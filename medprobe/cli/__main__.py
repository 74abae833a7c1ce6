"""`python -m medprobe.cli ...` (what `accelerate launch -m medprobe.cli` runs).

Imports (docs/architecture.md, layer commands): any layer; nothing outside cli/ imports it but
medprobe/__main__.
"""

import sys

from medprobe.cli import main

sys.exit(main())
