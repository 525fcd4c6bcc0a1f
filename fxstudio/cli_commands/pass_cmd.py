"""``fxstudio pass MODEL PASS [--arg NAME=VALUE]... [-o OUT.py] [--save-script S.json]``: run one torch.fx
pass on a model as one edit, print what it changed, record it as a one-edit script and (with ``-o``)
export and verify. ``fxstudio pass --list FILE`` lists the passes a file defines or imports.

``PASS`` is ``passes.py::name`` (a function, ``torch.fx.Transformer`` or ``PassBase`` the file defines
or imports; naming the file on the command line trusts it, as opening a ``.py`` model runs it), a
built-in ``fxstudio.passes.<name>``, or ``passes.py::pattern,replacement``: two functions of the file
for ``torch.fx.subgraph_rewriter.replace_pattern`` (a ``replace_pattern`` edit; the count of matches is
in the label). ``--arg NAME=VALUE`` (repeatable) passes a keyword argument to a ``run_pass`` pass:
``VALUE`` is in fxstudio's argument syntax (``docs/edit-scripts.md``: literals, tuples, torch dtypes…;
parsed, never evaluated) and is recorded as text in the edit's ``"kwargs"``. An analysis pass (one
that computes something and changes nothing) prints ``analysis: <label>`` and what it found.

``--list passes.py`` reads the file without running it: its top-level definitions, and the passes it
imports (``from X import name``), resolved by locating and reading ``X``'s source without importing
it (``fxstudio.core.passes``); they are marked ``imported from X``. ``--list fxstudio.passes``: the
built-ins.

Also the pass-file trust of ``fxstudio apply`` (``--trust-passes``, ``--allow-changed-passes``):
``check_script_passes`` refuses, before anything runs, a script naming a pass file that is not trusted
or changed since its ``sha256`` was recorded, and ``cli_pass_trust`` is the trust replaying it uses.

Exit status: 0 the pass ran (and exported), 1 the pass was refused (it changed nothing, raised, broke
the graph, a pattern matched nothing) or the export failed its check, 2 bad usage (a bad ``--arg``
among them: nothing runs), an unreadable model or pass file.
"""

from __future__ import annotations

import argparse
import keyword
import os
import re
import sys
from pathlib import Path
from typing import Any

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
                        help="passes.py::name (a function, Transformer or PassBase the file defines or imports; "
                             "it runs), passes.py::pattern,replacement (replace_pattern with two functions of the "
                             "file) or a built-in fxstudio.passes.NAME")
    parser.add_argument("--arg", dest="pass_args", action="append", metavar="NAME=VALUE",
                        help="a keyword argument of the pass (repeatable); VALUE in fxstudio's argument syntax "
                             "(3, 0.5, 'text', (1, 2), torch.float16; never evaluated), recorded in the edit's kwargs")
    parser.add_argument("--list", dest="list_file", metavar="PASSES.py",
                        help="list the passes a file defines or imports, without running it or importing "
                             "anything (fxstudio.passes: the built-ins)")
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
        print(f"{path.name} defines or imports no pass (a function of one argument, a Transformer, a PassBase "
              "or an Interpreter).")
    for info in infos:
        print(f"{path.name}::{info.name}\t{info.kind}\t{info.where}")
    return 0


def _is_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def parse_pass_spec(spec: str) -> tuple[Path | None, str]:
    """``"passes.py::name"`` → (absolute file, name); ``"passes.py::pattern,replacement"`` → (absolute file,
    ``"pattern,replacement"``); ``"fxstudio.passes.x"`` → (None, the name). ``FxStudioError`` (exit 2)
    otherwise, or when the file does not exist."""
    from fxstudio.core.passes import BUILTIN_PREFIX

    if "::" in spec:
        file, _, name = spec.rpartition("::")
        names = name.split(",")
        if not file or len(names) > 2 or not all(_is_name(n) for n in names):
            raise FxStudioError(f"{spec}: expected passes.py::name or passes.py::pattern,replacement "
                                "(Python names after ::).")
        path = Path(os.path.abspath(file))
        if not path.is_file():
            raise FxStudioError(f"There is no pass file {path}.")
        return path, name
    if spec.startswith(BUILTIN_PREFIX):
        return None, spec
    raise FxStudioError(f"{spec}: expected passes.py::name or a built-in {BUILTIN_PREFIX}NAME "
                        f"(fxstudio pass --list {BUILTIN_LIST} lists them).")


def parse_pass_args(items: list[str] | None) -> dict[str, str]:
    """``--arg NAME=VALUE`` items → ``{NAME: VALUE text}``, each VALUE checked to parse in fxstudio's
    argument syntax (``fxstudio.core.argsyntax.parse_value``; nothing is evaluated, no node may be
    named). ``FxStudioError`` (one line, exit 2) for a bad or repeated NAME or a VALUE that does not parse."""
    from fxstudio.core.argsyntax import parse_value, short_repr
    from fxstudio.core.errors import EditRefused
    from fxstudio.core.passes import kwargs_problem

    def no_nodes(name: str) -> Any:
        """The node lookup of the parser: a pass argument never names a node."""
        raise EditRefused(f"a pass argument cannot name a node (%{name}).")

    kwargs: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not _is_name(name):
            raise FxStudioError(f"--arg {short_repr(item)}: expected NAME=VALUE with NAME a Python name "
                                "(e.g. --arg threshold=0.5).")
        if name in kwargs:
            raise FxStudioError(f"--arg {name}: given twice.")
        text = value.strip()
        try:
            parse_value(text, no_nodes)
        except EditRefused as exc:
            raise FxStudioError(f"--arg {name}: {exc.message}") from None
        except RecursionError:
            raise FxStudioError(f"--arg {name}: the value is nested too deeply.") from None
        kwargs[name] = text
    problem = kwargs_problem(kwargs)  # the run_pass edit's own rules (example_inputs is fxstudio's, at most 32…)
    if problem:
        raise FxStudioError("--arg: " + problem.removeprefix("'kwargs': "))
    return kwargs


def pass_edit(path: Path | None, name: str, kwargs: dict[str, str]) -> dict:
    """The edit ``fxstudio pass`` applies: ``run_pass`` (with ``kwargs`` when there are some) or, for a
    ``"pattern,replacement"`` name, ``replace_pattern`` (which takes no ``--arg``: exit 2)."""
    if "," in name:
        if kwargs:
            raise FxStudioError("--arg is for a pass (passes.py::name), not for pattern,replacement.")
        pattern, replacement = name.split(",")
        return {"op": "replace_pattern", "file": str(path), "pattern": pattern, "replacement": replacement}
    edit: dict = {"op": "run_pass", "name": name} if path is None else {"op": "run_pass", "file": str(path),
                                                                          "name": name}
    if kwargs:
        edit["kwargs"] = dict(kwargs)
    return edit


ANALYSIS_MARK = re.compile(r"(\(|; )analysis: [^()]*\)$")
"""How the label of an analysis pass's edit ends (``... (analysis: tensor_meta, type on 4 nodes)``, maybe
after notes: ``(trial run skipped; analysis: …)``): the edit set node metadata (what the pass computed)
and left the graph as it was (``SetNodeMeta.summary`` of ``edits/pass_analysis.py``)."""


def pass_label(edit: dict) -> str:
    """The label a pass's results are kept under in ``node.meta`` (``file.py::name`` or the built-in's name)."""
    return f"{Path(edit['file']).name}::{edit['name']}" if edit.get("file") else edit["name"]


def analysis_of(doc, edit: dict, result) -> list[tuple[str, dict]] | None:
    """What an analysis pass computed, per node: ``[(node name, {key: summary text})]`` from the
    nodes' ``node.meta`` analyses, or None when the edit changed the graph (not an analysis)."""
    from fxstudio.core.passes import ANALYSIS_KEY

    if result.added or result.removed or not ANALYSIS_MARK.search(result.label):
        return None
    label = pass_label(edit)
    found = []
    for node_id in sorted(result.changed):
        node = doc.node(node_id)
        texts = ((node.meta.get(ANALYSIS_KEY) or {}).get(label) if node is not None else None) or {}
        if texts:
            found.append((node.name, texts))
    return found


def print_analysis(label: str, found: list[tuple[str, dict]]) -> None:
    """``analysis: <label>`` and one line per node (``  relu: tensor_meta 3×4 float32; type …``), at
    most ``MAX_LISTED`` of them."""
    print(f"analysis: {label}")
    for name, texts in found[:MAX_LISTED]:
        print(f"  {name}: " + "; ".join(f"{key} {text}" for key, text in texts.items()))
    if len(found) > MAX_LISTED:
        print(f"  … (+{len(found) - MAX_LISTED} nodes)")


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
        if args.model or args.pass_spec or args.pass_args:
            raise FxStudioError("fxstudio pass --list PASSES.py takes no MODEL, PASS or --arg.")
        return _list(args.list_file)
    if not args.model or not args.pass_spec:
        raise FxStudioError("fxstudio pass needs MODEL and PASS (passes.py::name or fxstudio.passes.NAME), "
                            "or --list PASSES.py.")
    from fxstudio.cli_commands.model_args import load_from_args
    from fxstudio.core.document import Document, save_script
    from fxstudio.core.errors import EditRefused

    path, name = parse_pass_spec(args.pass_spec)
    edit = pass_edit(path, name, parse_pass_args(args.pass_args))  # a bad --arg: exit 2 before anything runs
    loaded = load_from_args(args)
    doc = Document(loaded)
    doc.set_pass_trust(cli_pass_trust(None, trust_files=False, only=path))
    try:
        result = doc.apply_edit(edit)
    except EditRefused as exc:
        print(f"fxstudio: {exc.message}", file=sys.stderr)
        return 1
    found = analysis_of(doc, edit, result)
    if found is not None:
        print_analysis(result.label, found)
    else:
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
