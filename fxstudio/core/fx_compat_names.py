"""torch.fx's name bookkeeping and the code it writes, behind one door (split from ``fx_compat``,
which re-exports every public name here): the code-name guard on ``Graph.python_code``, torch.fx's
printout of a failing forward, FakeTensorMode's failure logs, and the graph namespace (used names,
snapshots, the per-edit log). Each private name read here has the public fallback its docstring names.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator

import torch
import torch.fx

from fxstudio.core.code_names import check_graph_code_names


# ----------------------------------------------------------------------------- the code-name guard
# torch.fx writes node names, keyword names, method names and attribute paths into generated code as
# they are. Every graph whose code is generated in this process (a loader's, an edit's, a pass's, a
# rebuilt capture's, torch's own unlifting of a .pt2) passes ``code_names.check_graph_code_names``
# first: this is the single point, whichever path made the node. ``Graph.python_code`` is public API.

def _install_code_name_guard() -> None:
    original = torch.fx.Graph.python_code
    if getattr(original, "fxstudio_guard", False):
        return

    def python_code(self, *args, **kwargs):
        check_graph_code_names(self)
        return original(self, *args, **kwargs)

    python_code.__doc__ = original.__doc__
    python_code.__wrapped__ = original
    python_code.fxstudio_guard = True
    torch.fx.Graph.python_code = python_code


_install_code_name_guard()


@contextlib.contextmanager
def fake_tensor_logs_off() -> Iterator[None]:
    """FakeTensorMode logs a traceback when an op fails on its inputs (logger
    ``torch._subclasses.fake_tensor``); inside this block that failure is an expected outcome the caller
    reports in one line, not something to print. Fallback (another logger name): torch's lines stay."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    before = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = before


def quiet_fx_call_errors() -> None:
    """Stop torch.fx from printing its own multi-line message on stderr when a GraphModule's forward
    raises (``torch.fx.graph_module._WrappedCall.__call__`` prints the generated code's line, then
    re-raises): the CLI and the window name the failing node themselves, in one line. The exception
    still propagates unchanged. Installed by the CLI and the app only, never by ``import fxstudio``
    (a notebook keeps torch's behaviour). Fallback (no ``_WrappedCall``): torch's message stays."""
    try:
        from torch.fx.graph_module import _WrappedCall
    except ImportError:
        return
    original = _WrappedCall.__call__
    if getattr(original, "fxstudio_quiet", False):
        return

    def __call__(self, obj, *args, **kwargs):
        if not hasattr(self, "cls_call") or not hasattr(self, "cls"):
            return original(self, obj, *args, **kwargs)
        if self.cls_call is not None:
            return self.cls_call(obj, *args, **kwargs)
        return super(self.cls, obj).__call__(*args, **kwargs)

    __call__.fxstudio_quiet = True
    _WrappedCall.__call__ = __call__


# ----------------------------------------------------------------------------- graph names


def used_names(graph: torch.fx.Graph) -> set[str]:
    """The names fx's namespace has handed out (``Graph._graph_namespace._used_names``, erased
    nodes included). Fallback: the names of the graph's live nodes."""
    try:
        return graph._graph_namespace._used_names
    except AttributeError:
        return {n.name for n in graph.nodes}


def reserve_names(graph: torch.fx.Graph, names: Iterable[str]) -> None:
    """Mark ``names`` taken in fx's namespace (``_graph_namespace._used_names``), so new nodes never
    get them. Fallback: nothing to do (without the private set, fx derives names from live nodes)."""
    try:
        graph._graph_namespace._used_names.update(names)
    except AttributeError:
        pass


def rename_in_namespace(graph: torch.fx.Graph, node: torch.fx.Node, name: str) -> None:
    """Record ``node``'s new ``name`` in fx's namespace (``_graph_namespace._rename_object``).
    Fallback: ``reserve_names`` of the name (the node itself already carries it)."""
    try:
        rename = graph._graph_namespace._rename_object
    except AttributeError:
        reserve_names(graph, [name])
        return
    rename(node, name)


def namespace_snapshot(graph: torch.fx.Graph) -> tuple[set[str], dict[str, int]]:
    """A copy of fx's name bookkeeping (``_graph_namespace._used_names`` and ``_base_count``).
    Fallback: the live node names and no counters."""
    try:
        ns = graph._graph_namespace
        return set(ns._used_names), dict(ns._base_count)
    except AttributeError:
        return {n.name for n in graph.nodes}, {}


def namespace_restore(graph: torch.fx.Graph, saved: tuple[set[str], dict[str, int]]) -> None:
    """Put back a ``namespace_snapshot`` (``_graph_namespace._used_names``/``_base_count``).
    Fallback: nothing to restore (names then follow the live nodes)."""
    try:
        ns = graph._graph_namespace
        ns._used_names, ns._base_count = set(saved[0]), dict(saved[1])
    except AttributeError:
        pass


# ----------------------------------------------------------------------------- nodes


def name_never_used(graph: torch.fx.Graph, name: str) -> bool:
    """True when fx's namespace never handed out ``name`` in ``graph`` (``_graph_namespace._used_names``),
    so no node, live or renamed, can hold it. Fallback: False (the caller scans the graph)."""
    used = getattr(getattr(graph, "_graph_namespace", None), "_used_names", None)
    return isinstance(used, set) and name not in used


_ABSENT = object()


class _LoggedSet(set):
    """fx's set of used names, logging the names added to it while ``log`` is a list."""

    log: list | None = None

    def add(self, item) -> None:  # noqa: D102 - set.add
        log = self.log
        if log is not None and item not in self:
            log.append(item)
        set.add(self, item)


class _LoggedDict(dict):
    """fx's counters of name bases, logging the first old value of each key set while ``log`` is a dict."""

    log: dict | None = None

    def __setitem__(self, key, value) -> None:
        log = self.log
        if log is not None and key not in log:
            log[key] = self.get(key, _ABSENT)
        dict.__setitem__(self, key, value)


def namespace_mark(graph: torch.fx.Graph) -> tuple:
    """A mark of fx's name bookkeeping (``_used_names``, ``_base_count``) for ``namespace_rewind``.
    Costs nothing per mark: the graph's two tables are swapped, once, for ones that log what is added
    to them from the mark on. Fallback: a copy (``namespace_snapshot``)."""
    ns = getattr(graph, "_graph_namespace", None)
    used, counts = getattr(ns, "_used_names", None), getattr(ns, "_base_count", None)
    if not isinstance(used, set) or not isinstance(counts, dict):
        return ("copy", graph, namespace_snapshot(graph))
    if type(used) is not _LoggedSet:
        ns._used_names = used = _LoggedSet(used)
    if type(counts) is not _LoggedDict:
        ns._base_count = counts = _LoggedDict(counts)
    used.log, counts.log = [], {}
    return ("log", graph, (used, counts))


def namespace_rewind(saved: tuple) -> None:
    """Put fx's name bookkeeping back to a ``namespace_mark``."""
    kind, graph, data = saved
    if kind == "copy":
        namespace_restore(graph, data)
        return
    used, counts = data
    for name in used.log or ():
        set.discard(used, name)
    for key, old in (counts.log or {}).items():
        if old is _ABSENT:
            dict.pop(counts, key, None)
        else:
            dict.__setitem__(counts, key, old)
    used.log, counts.log = [], {}


# ----------------------------------------------------------------------------- who registers an operator

def op_definitions(registrar: object) -> set[str] | None:
    """The operators (``namespace::name``) a ``torch.library.Library`` or ``torch.library.CustomOpDef``
    defines: ``Library._op_defs``, ``CustomOpDef._qualname``. Fallback: None (not known; the caller
    then takes every library of the namespace as a candidate)."""
    defs = getattr(registrar, "_op_defs", None)
    if isinstance(defs, (set, frozenset)):
        return {d for d in defs if isinstance(d, str)}
    qualname = getattr(registrar, "_qualname", None)
    return {qualname} if isinstance(qualname, str) else None
