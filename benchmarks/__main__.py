"""``python -m benchmarks`` (from a source checkout) runs the benchmark and reproduction command."""

import sys

from .cli import main

sys.exit(main())
