"""``python -m benchmarks`` (from a source checkout) runs the benchmark and reproduction command.

Loading the command (NumPy, SciPy, the solvers) takes seconds; Ctrl-C meanwhile ends it with
one line and exit status 130, as it does once the command runs."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:
    if "--debug" in sys.argv:
        raise
    print("python -m benchmarks: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
