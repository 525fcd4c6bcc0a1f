"""``fxstudio pass MODEL PASS [-o OUT.py] [--save-script S.json]``: run one torch.fx pass on a model as
one edit, print what it changed, record it as a one-edit script and (with ``-o``) export and verify.

``PASS`` is ``passes.py::name`` (a function, ``torch.fx.Transformer`` or ``PassBase`` of that file;
naming the file on the command line trusts it, as opening a ``.py`` model runs it) or a built-in
``fxstudio.passes.<name>``. ``fxstudio pass --list passes.py`` lists the passes a file defines,
read from its top-level definitions without running it (``--list fxstudio.passes``: the built-ins).

Also the pass-file trust of ``fxstudio apply`` (``--trust-passes``, ``--allow-changed-passes``):
``check_script_passes`` refuses, before anything runs, a script naming a pass file that is not trusted
or changed since its ``sha256`` was recorded, and ``cli_pass_trust`` is the trust replaying it uses.

Exit status: 0 the pass ran (and exported), 1 the pass was refused (it changed nothing, raised, broke
the graph) or the export failed its check, 2 bad usage, an unreadable model or pass file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fxstudio.cli_commands.model_args import add_loading_arguments
from fxstudio.core.errors import FxStudioError

PASS_OPS = ("run_pass", "replace_pattern")
BUILTIN_LIST = "fxstudio.passes"
MAX_LISTED = 20  # node names printed per kind (added / removed / changed)


def add_trust_arguments(parser: argparse.ArgumentParser) -> None:
    """``--trust-passes`` and ``--allow-changed-passes`` (``fxstudio apply``)."""
    parser.add_argument("--trust-passes", action="store_true",
                        help="run the pass files the script's run_pass / replace_pattern edits name (they run code; "
                             "built-in fxstudio.passes.* run without this)")
    parser.add_argument("--allow-changed-passes", action="store_true",
                        help="run a pass file even when its sha256 differs from the one the script recorded")


def cli_pass_trust(base_dir: Path | None, *, trust_files: bool, allow_changed: bool = False,
                   only: Path | None = None):
    """The ``PassTrust`` of a command: every file (``trust_files``), only ``only``, or none; relative
    files are relative to ``base_dir``."""
    from fxstudio.core.passes import PassTrust, trust_all

    if only is not None:
        allowed = Path(os.path.abspath(only))
        return PassTrust(base_dir=base_dir, trusted=lambda p: Path(p) == allowed, allow_changed=allow_changed)
    if trust_files:
        return PassTrust(base_dir=base_dir, trusted=trust_all, allow_changed=allow_changed)
    return PassTrust(base_dir=base_dir, allow_changed=allow_changed)


def script_pass_files(edits: list, base_dir: Path) -> list[tuple[int, dict, Path]]:
    """``(1-based index, edit, resolved file)`` of each edit of a script that runs a pass file."""
    from fxstudio.core.passes import PassTrust

    resolver = PassTrust(base_dir=base_dir)
    found = []
    for i, edit in enumerate(edits):
        if isinstance(edit, dict) and edit.get("op") in PASS_OPS and isinstance(edit.get("file"), str):
            found.append((i + 1, edit, resolver.resolve(edit["file"])))
    return found


def check_script_passes(edits: list, base_dir: Path, *, trust_files: bool, allow_changed: bool) -> None:
    """Refuse (``FxStudioError``, exit 2, one line) a script naming a pass file without
    ``--trust-passes``, or one whose recorded ``sha256`` differs without ``--allow-changed-passes``.
    Nothing of the file runs here (the sha256 is of its bytes)."""
    from fxstudio.core.passes import file_sha256

    for index, edit, path in script_pass_files(edits, base_dir):
        op = edit["op"]
        if not trust_files:
            raise FxStudioError(f"edit {index} ({op}) runs code from the pass file {path}: "
                                "replay with --trust-passes to run it (nothing was run).")
        recorded = edit.get("sha256")
        if isinstance(recorded, str) and path.is_file() and not allow_changed:
            try:
                now = file_sha256(path)
            except FxStudioError as exc:
                raise FxStudioError(f"edit {index} ({op}): {exc.message}") from None
            if now != recorded:
                raise FxStudioError(f"edit {index} ({op}): the pass file {path} changed since the script recorded it "
                                    f"(sha256 {recorded[:12]}… then, {now[:12]}… now); check it and replay with "
                                    "--allow-changed-passes to run it anyway.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``fxstudio pass``."""
    from fxstudio.cli_commands.export import add_output_arguments

    parser.add_argument("model", metavar="MODEL", nargs="?",
                        help="model file: FILE.py[::Name], FILE.pt2, or FILE.pt/.pth (a pickled module)")
    parser.add_argument("pass_spec", metavar="PASS", nargs="?",
                        help="passes.py::name (a function, Transformer or PassBase of that file; it runs) "
                             "or a built-in fxstudio.passes.NAME")
    parser.add_argument("--list", dest="list_file", metavar="PASSES.py",
                        help="list the passes a file defines, without running it (fxstudio.passes: the built-ins)")
    add_loading_arguments(parser)
    parser.add_argument("--save-script", metavar="S.json",
                        help="write the pass as a one-edit script (replay it with fxstudio apply --trust-passes)")
    add_output_arguments(parser)
    parser.epilog = ("Exit status: 0 the pass ran (and exported), 1 the pass was refused or the export failed "
                     "its check, 2 bad usage, an unreadable model or pass file.")


def _list(target: str) -> int:
    from fxstudio.core.passes import BUILTIN_PASSES, pass_names

    if target.rstrip(".") == BUILTIN_LIST:
        for name, fn in BUILTIN_PASSES.items():
            print(f"{name}\tbuilt-in\t{(fn.__doc__ or '').strip().splitlines()[0] if fn.__doc__ else ''}")
        return 0
    path = Path(target)
    if not path.is_file():
        raise FxStudioError(f"There is no pass file {path}.")
    infos = pass_names(path)
    if not infos:
        print(f"{path.name} defines no pass (a function of one argument, a Transformer or a PassBase).")
    for info in infos:
        print(f"{path.name}::{info.name}\t{info.kind}\tline {info.line}")
    return 0


def parse_pass_spec(spec: str) -> tuple[Path | None, str]:
    """``"passes.py::name"`` → (absolute file, name); ``"fxstudio.passes.x"`` → (None, the name)."""
    from fxstudio.core.passes import BUILTIN_PREFIX

    if "::" in spec:
        file, _, name = spec.rpartition("::")
        if not file or not name.isidentifier():
            raise FxStudioError(f"{spec}: expected passes.py::name (a Python name after ::).")
        path = Path(os.path.abspath(file))
        if not path.is_file():
            raise FxStudioError(f"There is no pass file {path}.")
        return path, name
    if spec.startswith(BUILTIN_PREFIX):
        return None, spec
    raise FxStudioError(f"{spec}: expected passes.py::name or a built-in {BUILTIN_PREFIX}NAME "
                        f"(fxstudio pass --list {BUILTIN_LIST} lists them).")


def _names(doc, ids, *, original: bool = False) -> str:
    nodes = [doc.original_node(i) if original else doc.node(i) for i in sorted(ids)]
    names = [n.name for n in nodes if n is not None]
    more = f" … (+{len(names) - MAX_LISTED})" if len(names) > MAX_LISTED else ""
    return ", ".join(names[:MAX_LISTED]) + more


def _record_file(edit: dict, path: Path, save_script: str | None) -> dict:
    """The recorded edit with ``file`` relative to the saved script's folder (absolute without one)."""
    record = dict(edit)
    if save_script and path is not None:
        folder = Path(os.path.abspath(save_script)).parent
        try:
            relative = os.path.relpath(path, folder)
        except ValueError:  # another drive
            relative = None
        # relative (the script travels with its passes) unless that climbs more than one folder
        ups = Path(relative).parts[:2].count("..") if relative else 2
        record["file"] = relative if ups < 2 else str(path)
    return record


def run(args: argparse.Namespace) -> int:
    """List, or load, run the pass, print, save and export; see the module docstring for the exit status."""
    if args.list_file:
        if args.model or args.pass_spec:
            raise FxStudioError("fxstudio pass --list PASSES.py takes no MODEL or PASS.")
        return _list(args.list_file)
    if not args.model or not args.pass_spec:
        raise FxStudioError("fxstudio pass needs MODEL and PASS (passes.py::name or fxstudio.passes.NAME), "
                            "or --list PASSES.py.")
    from fxstudio.cli_commands.model_args import load_from_args
    from fxstudio.core.document import Document, save_script
    from fxstudio.core.errors import EditRefused

    path, name = parse_pass_spec(args.pass_spec)
    loaded = load_from_args(args)
    doc = Document(loaded)
    doc.set_pass_trust(cli_pass_trust(None, trust_files=False, only=path))
    edit = {"op": "run_pass", "name": name} if path is None else {"op": "run_pass", "file": str(path), "name": name}
    try:
        result = doc.apply_edit(edit)
    except EditRefused as exc:
        print(f"fxstudio: {exc.message}", file=sys.stderr)
        return 1
    print(result.label)
    print(f"nodes: {len(result.added)} added, {len(result.removed)} removed, {len(result.changed)} changed "
          "(changed: also the nodes whose inputs or users changed)")
    for word, ids, original in (("added", result.added, False), ("removed", result.removed, True),
                                ("changed", result.changed, False)):
        if ids:
            print(f"  {word}: {_names(doc, ids, original=original)}")
    script = doc.edit_script()
    if args.save_script:
        script["edits"] = [_record_file(e, path, args.save_script) for e in script["edits"]]
        save_script(args.save_script, script)
        print(f"wrote {args.save_script} (1 edit; replay with fxstudio apply MODEL {args.save_script}"
              f"{' --trust-passes' if path is not None else ''})")
    if args.output:
        from fxstudio.cli_commands.export import export_and_report

        return export_and_report(doc, args.output, script_path=args.save_script, verify=args.verify)
    return 0
