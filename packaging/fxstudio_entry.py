"""The entry point of the frozen bundle (``dist/fxstudio/fxstudio``): the ``fxstudio`` command line,
plus the hidden interpreter mode that checking an exported file needs.

A frozen app has no ``python``: ``sys.executable`` is this bundle's binary. The export check
(``fxstudio/core/export/verify.py``) runs ``python -I -B -c CODE ARGS...`` in a fresh process; frozen,
it runs ``fxstudio --fxstudio-python-c CODE ARGS...`` instead, which lands here and executes CODE as
``python -c`` would, with the bundle's torch and nothing of fxstudio imported (the check makes
fxstudio unimportable, so the exported file must stand alone, as with a real interpreter).
"""

import sys

PYTHON_C_FLAG = "--fxstudio-python-c"
"""Equal to ``fxstudio.core.export.verify.FROZEN_PYTHON_C_FLAG`` (a test checks; not imported here,
so that this mode imports nothing of fxstudio)."""


def run_python_c(code: str, args: list[str]) -> int:
    """Execute ``code`` as ``python -I -B -c code *args`` does: ``sys.argv == ["-c", *args]``, in a
    fresh ``__main__`` namespace, writing no bytecode; an exception prints its traceback and exits 1."""
    sys.argv = ["-c", *args]
    sys.dont_write_bytecode = True
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(code, "<string>", "exec"), namespace)  # noqa: S102 - the point of this mode
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - reported as python reports it, without this frame
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
        return 1
    return 0


def main() -> int:
    """Dispatch: the hidden ``--fxstudio-python-c`` mode, else ``fxstudio.cli.main``."""
    if len(sys.argv) > 2 and sys.argv[1] == PYTHON_C_FLAG:
        return run_python_c(sys.argv[2], sys.argv[3:])
    from fxstudio.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
