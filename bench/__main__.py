"""Run every benchmark in turn: ``python -m bench`` (or ``make bench``). ``--quick`` for a smoke run."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    """Run each ``bench/bench_*.py`` in its own process so one's memory use cannot skew the next."""
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_"))
    wanted = [a for a in argv if not a.startswith("-")]
    flags = [a for a in argv if a.startswith("-")]
    failed = []
    for name in names:
        if wanted and name not in wanted and name.removeprefix("bench_") not in wanted:
            continue
        print(f"\n## {name}\n", flush=True)
        rc = subprocess.call([sys.executable, "-m", f"bench.{name}", *flags])
        if rc:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    importlib.invalidate_caches()
    sys.exit(main(sys.argv[1:]))
