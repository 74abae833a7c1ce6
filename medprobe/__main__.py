"""`python -m medprobe ...` is the `medprobe` command.

Imports (docs/architecture.md, layer commands): any layer.
"""

import sys

from medprobe.cli import main

sys.exit(main())
