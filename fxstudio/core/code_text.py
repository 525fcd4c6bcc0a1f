"""The generated code of a graph, kept up to date line by line after edits of a few nodes.

``graph.python_code(root_module="self")`` costs ~0.2 s on a 10k-node graph. An argument edit
(a constant, a keyword, a rewire, and their undo/redo) changes few lines of that text: the edited
node's own line and the ``;  a = b = None`` deletion suffixes of the nodes that became (or stopped
being) the last user of a value. An insert, an erase, a duplicate or a small dead-code elimination
adds or removes one line per node besides. :class:`IncrementalCode` keeps the text of one full
generation and recomputes just those lines, asking torch.fx itself for each new line (the node
copied into a throw-away graph), so the text stays identical to a full regeneration. Whenever that
cannot be guaranteed, :meth:`IncrementalCode.update` / :meth:`IncrementalCode.edit` return None
and the caller regenerates everything.

Why the identity holds: fx names every symbol of the generated code (node values, and globals such
as user functions) in one namespace, first come first served. :meth:`IncrementalCode.full` accepts
a generation only when nothing in it was renamed by that namespace (each node's line starts with
its own name, no global carries a ``_N`` suffix), so every symbol got its own candidate name and
those candidates are all distinct. An update only accepts a new line whose globals are objects the
full generation already named the same way; the symbols of the new text are then a subset of the old
ones with distinct candidates, so every one keeps its name whatever the order they appear in.
A new node adds one symbol: it is accepted only when fx writes the node alone under its own name
(so the name is a legal, unreserved candidate) and no other node of the new text nor any global of
the last full generation has that name; the candidates then stay distinct, and the argument holds.
Lines: the standard code generator writes one line per non-placeholder node, in node order, with
nothing between them (checked by :meth:`IncrementalCode.full`), so a new node's line goes right
before the line of the next node that kept its own, and a removed node's line just goes. The
``def`` line and the ``wrap(...)`` lines above it are never touched: edits that would change them
(placeholders, the output, wrapped calls added or removed) refuse.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.code_lines import LineEdit, apply_edits, make_edits

MAX_NODES = 64
"""More nodes added, removed or rewritten than this in one :meth:`IncrementalCode.edit`: it refuses
(a full generation is then fine, and the line bookkeeping stays small)."""

_SUFFIXED = re.compile(r"_\d+$")
_MISSING = object()


def _generated(node: torch.fx.Node) -> tuple:
    """What a node's line is made of: inputs (fx's order), op, target, args, kwargs, type.
    (:meth:`IncrementalCode._index` builds the same tuple inline.)"""
    return (tuple(fx_compat.node_input_nodes(node)), node.op, node.target, fx_compat.node_args(node),
            fx_compat.node_kwargs(node), node.type)


def _same(node: torch.fx.Node, generated: tuple) -> bool:
    """True when the node's op, target, arguments and type are the objects generated last time.

    fx never mutates an argument tuple in place (lists become immutable lists), so identity means
    the same text; a new but equal tuple just costs a regeneration of that line.
    """
    _, op, target, args, kwargs, type_ = generated
    return (node.op == op and node.target is target and fx_compat.node_args(node) is args
            and fx_compat.node_kwargs(node) is kwargs and node.type is type_)


def _defines(text: str, name: str) -> bool:
    """True when ``text`` is a body line assigning ``name`` (with or without a type annotation)."""
    head = "    " + name
    return text.startswith(head) and text[len(head):len(head) + 3] in (" = ", " : ")


def _deletion_suffix(names: list[str]) -> str:
    """What fx appends to a line to free the values ``names`` (empty when there are none)."""
    return ";  " + " = ".join(names + ["None"]) if names else ""


class IncrementalCode:
    """The text of ``graph.python_code(root_module="self")``, updated line by line after edits.

    Call :meth:`full` once (and again whenever :meth:`edit` or :meth:`update` returns None); after
    each edit of the graph call :meth:`edit` with the nodes the edit added or changed (it answers
    line edits, any edit), or :meth:`update` for an edit that added and removed nothing (it
    answers ``{line: text}``).
    """

    def __init__(self) -> None:
        self._graph: torch.fx.Graph | None = None
        self._lines: list[str] = []
        self._nodes: list[torch.fx.Node] = []  # in graph order, as last generated
        self._names: list[str] = []
        self._pos: dict[torch.fx.Node, int] = {}  # empty unless incremental updates are possible
        self._line: list[int] = []  # per position: 0-based line index, -1 for none
        self._generated: dict[torch.fx.Node, tuple] = {}  # per node: what its line was made of
        self._last_user: dict[torch.fx.Node, torch.fx.Node | None] = {}  # value -> last user (None: no users)
        self._globals: dict[str, object] = {}
        self._def_line = 0  # 1-based line of "def forward(...)"
        self._output_editable = False
        self._by_name: dict[str, torch.fx.Node] = {}  # node name -> node, as last generated
        self._placeholders: list[str] = []  # their names (never added, removed or renamed by an edit)
        self._body_start = 0  # 0-based line of the first node line; node lines follow it in node order
        self._structural = ""  # why nodes cannot be added or removed line by line ("" when they can)
        self.incremental = False
        """True when :meth:`update` may answer; False until :meth:`full`, and after a refusal."""
        self.reason = "no generation yet"
        """Why the last :meth:`full` or :meth:`update` could not give lines ("" when it could)."""

    # ------------------------------------------------------------------ full generation

    def full(self, graph: torch.fx.Graph) -> str:
        """Generate the whole code of ``graph``, remember it, and return it (``PythonCode.src``)."""
        pc = graph.python_code(root_module="self")
        self._graph = graph
        self._lines = pc.src.split("\n")
        self._globals = dict(pc.globals)
        self.reason = self._index(graph, pc)
        self.incremental = not self.reason
        return pc.src

    @property
    def text(self) -> str:
        """The current text: what ``graph.python_code(root_module="self").src`` gives."""
        return "\n".join(self._lines)

    @property
    def lines(self) -> list[str]:
        """The current text's lines (do not modify)."""
        return self._lines

    def line_of(self, node: torch.fx.Node) -> int:
        """1-based line of the text defining ``node``; 0 when it has none of its own (placeholders)
        or the last :meth:`full` could not index the text."""
        i = self._pos.get(node)
        return self._line[i] + 1 if i is not None else 0

    def node_lines(self) -> dict[str, int] | None:
        """Node name → 1-based line of the text defining it: the ``def`` line for placeholders,
        the ``return`` line for the output. None when the last :meth:`full` could not index the
        text (then :attr:`incremental` is False)."""
        maps = self.line_maps()
        return None if maps is None else maps[0]

    def line_maps(self, offset: int = 0) -> tuple[dict[str, int], dict[int, str]] | None:
        """:meth:`node_lines` with ``offset`` taken off every line, and its inverse: line → name of
        the node it defines (the first placeholder for the ``def`` line). None as for
        :meth:`node_lines`."""
        if not self.incremental:
            return None
        owned = [(name, k + 1 - offset) for name, k in zip(self._names, self._line) if k >= 0]
        line_of = dict(owned)
        node_at = {number: name for name, number in owned}
        if self._placeholders and self._lines[self._def_line - 1].startswith("def "):
            number = self._def_line - offset
            line_of.update(dict.fromkeys(self._placeholders, number))
            node_at.setdefault(number, self._placeholders[0])
        return line_of, node_at

    def _index(self, graph: torch.fx.Graph, pc) -> str:
        """Learn each node's line and last user; the reason incremental updates are off, or ""."""
        self._nodes = nodes = list(graph.nodes)
        self._names = [n.name for n in nodes]
        self._placeholders = [n.name for n in nodes if n.op == "placeholder"]
        self._pos = {}
        self._line = line = [-1] * len(nodes)
        self._generated = generated = {}
        self._last_user = last_user = {}
        self._output_editable = False
        codegen = fx_compat.graph_codegen(graph)
        if not fx_compat.is_standard_codegen(codegen):
            return f"custom code generator {type(codegen).__name__}"
        renamed = [name for name in self._globals if _SUFFIXED.search(name)]
        if renamed:
            return f"a global was renamed by fx's namespace ({renamed[0]})"
        lines = self._lines
        line_map = fx_compat.code_line_map(pc)
        if line_map is None:
            return "fx gives no line map of its code"
        start = line_map[0] - 1
        self._def_line = line_map[0]
        extra: list[tuple[int, int]] = []
        for key, i in line_map[1].items():  # in line order
            if i is not None:
                if line[i] < 0:
                    line[i] = key + start
                else:
                    extra.append((i, key + start))
        output = nodes[-1] if nodes and nodes[-1].op == "output" else None
        for i, k in extra:
            if nodes[i] is not output or lines[k].strip():
                return f"node {nodes[i].name} owns more than one line"
        for node in reversed(nodes):
            for value in fx_compat.node_input_nodes(node):
                if value not in last_user:
                    last_user[value] = node
        # One pass, inlined (10k nodes): remember each node, check its line is its own and ends
        # with the deletion suffix fx's rules give (a guard on this module's reading of them).
        for i, node in enumerate(nodes):
            inputs = tuple(fx_compat.node_input_nodes(node))
            op = node.op
            generated[node] = (inputs, op, node.target, fx_compat.node_args(node), fx_compat.node_kwargs(node), node.type)
            k = line[i]
            if op == "placeholder":
                if k >= 0:
                    return f"placeholder {node.name} is renamed in the body"
                continue
            if op == "output":
                if node is output and k >= 0:
                    self._output_editable = node.type is None and lines[k].startswith("    return ")
                continue
            name = node.name
            if k < 0 or not _defines(lines[k], name):
                return f"node {name} does not own a line starting with its name"
            dead = [v.name for v in inputs if last_user.get(v) is node]
            if node not in last_user:
                dead.append(name)
            if dead and not lines[k].endswith(_deletion_suffix(dead)):
                return f"node {name}: deletion suffix differs from fx's"
        self._pos = {node: i for i, node in enumerate(nodes)}
        self._by_name = dict(zip(self._names, nodes))
        self._structural = self._check_layout()
        return ""

    def _check_layout(self) -> str:
        """Why inserting or removing a line per added or removed node would not give fx's text
        ("" when it would): every node but the placeholders owns one line, the output's last, all
        of them consecutive (nothing else between them)."""
        nodes, line = self._nodes, self._line
        if not nodes or nodes[-1].op != "output" or line[-1] < 0 or len(self._by_name) != len(nodes):
            return "no return line of its own, or two nodes share a name"
        owned = [k for k, node in zip(line, nodes) if node.op != "placeholder"]
        start = owned[0]
        if owned != list(range(start, start + len(owned))):
            return "the node lines are not consecutive"
        self._body_start = start
        return ""

    def _suffix(self, node: torch.fx.Node, inputs: Iterable[torch.fx.Node]) -> str:
        """The deletion suffix of ``node``'s line given its ``inputs`` and the known last users."""
        last_user = self._last_user
        dead = [v.name for v in inputs if last_user.get(v) is node]
        if last_user.get(node) is None:
            dead.append(node.name)
        return _deletion_suffix(dead)

    # ------------------------------------------------------------------ updates

    def _redo_last_users(self, new_last: dict, redo: dict, gone: Iterable = ()) -> None:
        """Add to ``redo`` the old and new last users (not in ``gone``) of every value whose last
        user changes to ``new_last``'s, and the values that gain their first or lose their last user."""
        last_user = self._last_user
        for value, last in new_last.items():
            old = last_user.get(value)
            if old is last:
                continue
            for user in (old, last):
                if user is not None and user not in gone:
                    redo[user] = None
            if (old is None) != (last is None):
                redo[value] = None

    def _keep_emits(self, redo: dict, emits: dict, pos: dict) -> bool:
        """Into ``emits``, for each node of ``redo`` not regenerated: its stored line less its old
        deletion suffix. False (refused, :attr:`reason` set) when a stored line is out of step."""
        lines, line, generated = self._lines, self._line, self._generated
        for node in redo:
            if node in emits or node.op in ("placeholder", "output"):
                continue
            text = lines[line[pos[node]]]
            suffix = self._suffix(node, generated[node][0])
            if not text.endswith(suffix):
                self._refuse(f"node {node.name}: stored line out of step")
                return False
            emits[node] = text[:len(text) - len(suffix)] if suffix else text
        return True

    def _refuse(self, reason: str) -> None:
        self.incremental = False
        self.reason = reason
        return None

    def update(self, graph: torch.fx.Graph, changed: Iterable[torch.fx.Node]) -> dict[int, str] | None:
        """After an edit of ``graph`` that changed the nodes ``changed`` (their arguments, target
        or users): the lines whose text changed, ``{1-based line number: new text}``, already
        applied to :attr:`text`. None when the edit is beyond a line update (nodes added, removed,
        moved or renamed, a new global, a placeholder's default, ...): then call :meth:`full`.
        """
        if not self.incremental:
            return None
        nodes = self._nodes
        if graph is not self._graph or len(graph.nodes) != len(nodes):
            return self._refuse("the graph or its node count changed")
        pos = self._pos
        generated = self._generated
        regenerate: list[torch.fx.Node] = []
        for node in dict.fromkeys(changed):
            i = pos.get(node)
            if i is None:
                return self._refuse("a changed node is new")
            if node.name != self._names[i]:
                return self._refuse(f"node {self._names[i]} was renamed")
            before, after = node.prev, node.next
            if (before is not nodes[i - 1]) if i else (before.op != "root"):
                return self._refuse(f"node {node.name} moved")
            if (after is not nodes[i + 1]) if i + 1 < len(nodes) else (after.op != "root"):
                return self._refuse(f"node {node.name} moved")
            if not self._note_change(node, regenerate):
                return None

        emits = self._fresh_emits(regenerate)
        if emits is None:
            return None

        # Values whose users changed: inputs a regenerated node lost or gained.
        values: dict[torch.fx.Node, None] = {}
        for node in regenerate:
            values.update(dict.fromkeys(generated[node][0]))
            values.update(fx_compat.node_input_nodes(node))
        new_last: dict[torch.fx.Node, torch.fx.Node | None] = {}
        for value in values:
            users = value.users
            if any(user not in pos for user in users):
                return self._refuse(f"a user of {value.name} is new")
            new_last[value] = max(users, key=pos.__getitem__) if users else None

        # Lines to rewrite: the regenerated nodes, the old and new last users of every value whose
        # last user changed, and the values that gained their first or lost their last user.
        last_user = self._last_user
        redo: dict[torch.fx.Node, None] = dict.fromkeys(regenerate)
        self._redo_last_users(new_last, redo)
        # The other lines keep their emit part: their text less the old deletion suffix.
        if not self._keep_emits(redo, emits, pos):
            return None
        lines, line = self._lines, self._line

        last_user.update(new_last)
        for node in regenerate:
            generated[node] = _generated(node)
        result: dict[int, str] = {}
        for node, emit in emits.items():
            k = line[pos[node]]
            text = emit if node.op == "output" else emit + self._suffix(node, generated[node][0])
            if text != lines[k]:
                lines[k] = text
                result[k + 1] = text
        self.reason = ""
        return result

    # ------------------------------------------------------------------ nodes added or removed

    def edit(self, graph: torch.fx.Graph, changed: Iterable[torch.fx.Node]) -> list[LineEdit] | None:
        """After any edit of ``graph``: the line edits (lines inserted, removed and replaced, in the
        numbering of the text before) that give the new text, already applied to :attr:`text` and
        to the line maps. ``changed``: every node the edit added and every live node whose
        arguments, target or users it changed; removed nodes are found by a walk over the graph.

        None when a full generation is needed: whatever :meth:`update` refuses, more than
        :data:`MAX_NODES` nodes added, removed or rewritten, a placeholder, the output or a wrapped
        call added or removed, or a new node whose name or globals fx would not write as in the
        last :meth:`full`.
        """
        if not self.incremental:
            return None
        changed = list(dict.fromkeys(changed))
        pos = self._pos
        if len(graph.nodes) == len(self._nodes) and all(
                node in pos and not fx_compat.node_erased(node) for node in changed):
            lines = self.update(graph, changed)
            return None if lines is None else [LineEdit(k, 1, (text,)) for k, text in sorted(lines.items())]
        return self._restructure(graph, changed)

    def _walk(self, graph: torch.fx.Graph) -> tuple | str:
        """Match ``graph``'s nodes against the last node list: (new order, added nodes, removed
        nodes, {old 0-based line: added nodes whose lines go just before it}), or why not (a node
        moved, renamed, too many added or removed)."""
        nodes, pos, names, line = self._nodes, self._pos, self._names, self._line
        order: list[torch.fx.Node] = []
        added: list[torch.fx.Node] = []
        removed: list[torch.fx.Node] = []
        before: dict[int, list[torch.fx.Node]] = {}
        pending: list[torch.fx.Node] = []
        i = 0
        for node in graph.nodes:
            j = pos.get(node)
            if j is None:
                added.append(node)
                pending.append(node)
                if len(added) > MAX_NODES:
                    return f"more than {MAX_NODES} nodes added"
            else:
                if j != i:
                    if j < i or any(not fx_compat.node_erased(nodes[k]) for k in range(i, j)):
                        return f"node {node.name} moved"
                    removed.extend(nodes[i:j])
                    if len(removed) > MAX_NODES:
                        return f"more than {MAX_NODES} nodes removed"
                if node.name != names[j]:
                    return f"node {names[j]} was renamed"
                if pending and line[j] >= 0:
                    before[line[j]] = pending
                    pending = []
                i = j + 1
            order.append(node)
        if any(not fx_compat.node_erased(node) for node in nodes[i:]):
            return "nodes moved"
        removed.extend(nodes[i:])
        if pending:
            return "a node was added after the output"
        return order, added, removed, before

    def _restructure(self, graph: torch.fx.Graph, changed: list[torch.fx.Node]) -> list[LineEdit] | None:
        """:meth:`edit` when nodes were added or removed."""
        if graph is not self._graph:
            return self._refuse("another graph")
        if self._structural:
            return self._refuse(self._structural)
        if abs(len(graph.nodes) - len(self._nodes)) > MAX_NODES:
            return self._refuse(f"more than {MAX_NODES} nodes added or removed")
        walked = self._walk(graph)
        if isinstance(walked, str):
            return self._refuse(walked)
        order, added, removed, before = walked
        by_name, generated, pos = self._by_name, self._generated, self._pos
        gone = set(removed)
        for node in removed:
            if node.op in ("placeholder", "output") or node.meta.get("is_wrapped", False):
                return self._refuse(f"{node.op} {node.name} removed")
        names: set[str] = set()
        for node in added:
            name = node.name
            if node.op in ("placeholder", "output") or node.meta.get("is_wrapped", False):
                return self._refuse(f"{node.op} {name} added")
            # Its name must be a symbol of its own in fx's namespace (see the module docstring).
            other = by_name.get(name)
            if (other is not None and other not in gone) or name in self._globals or name in names:
                return self._refuse(f"new node {name} is named like another symbol of the code")
            names.add(name)
        regenerate = list(added)
        new = set(added)
        for node in changed:
            if node in gone or node in new:
                continue
            if node not in pos:
                return self._refuse(f"changed node {node.name} is not in the graph")
            if not self._note_change(node, regenerate):
                return None
        if len(regenerate) + len(removed) > MAX_NODES:
            return self._refuse(f"more than {MAX_NODES} nodes changed")
        emits = self._fresh_emits(regenerate)
        if emits is None:
            return None

        # Values whose users changed: the new nodes, and the inputs new, removed and regenerated
        # nodes have or had.
        new_pos = {node: k for k, node in enumerate(order)}
        values: dict[torch.fx.Node, None] = dict.fromkeys(added)
        for node in regenerate:
            values.update(fx_compat.node_input_nodes(node))
            if node not in new:
                values.update(dict.fromkeys(generated[node][0]))
        for node in removed:
            values.update(dict.fromkeys(generated[node][0]))
        last_user = self._last_user
        new_last: dict[torch.fx.Node, torch.fx.Node | None] = {}
        for value in values:
            if value in gone:
                continue
            users = value.users
            if any(user not in new_pos for user in users):
                return self._refuse(f"a user of {value.name} is not in the graph")
            new_last[value] = max(users, key=new_pos.__getitem__) if users else None
        redo: dict[torch.fx.Node, None] = dict.fromkeys(regenerate)
        self._redo_last_users(new_last, redo, gone)
        if not self._keep_emits(redo, emits, pos):
            return None
        lines, line = self._lines, self._line

        # Commit: the maps first (the new suffixes depend on them), then the text.
        replaced: dict[int, str | None] = {line[pos[node]]: None for node in removed}
        for node in removed:
            last_user.pop(node, None)
            del generated[node]
            if by_name.get(node.name) is node:
                del by_name[node.name]
        last_user.update(new_last)
        for node in regenerate:
            generated[node] = _generated(node)
        by_name.update((node.name, node) for node in added)
        texts: dict[torch.fx.Node, str] = {}
        for node, emit in emits.items():
            texts[node] = text = emit if node.op == "output" else emit + self._suffix(node, generated[node][0])
            if node not in new and text != lines[line[pos[node]]]:
                replaced[line[pos[node]]] = text
        edits = make_edits({k: [texts[node] for node in group] for k, group in before.items()}, replaced)
        apply_edits(lines, edits)
        counter = itertools.count(self._body_start)
        self._nodes, self._pos = order, new_pos
        self._names = [node.name for node in order]
        self._line = line = [-1 if node.op == "placeholder" else next(counter) for node in order]
        if any(lines[line[new_pos[node]]] != text for node, text in texts.items()):
            return self._refuse("the edited lines are not where the node order puts them")
        self.reason = ""
        return edits

    def _note_change(self, node: torch.fx.Node, regenerate: list[torch.fx.Node]) -> bool:
        """Add ``node`` to ``regenerate`` when what its line is made of changed. False (refused,
        :attr:`reason` set) when that line cannot be rewritten alone."""
        if not _same(node, self._generated[node]):
            reason = self._unwritable(node)
            if reason:
                self._refuse(reason)
                return False
            regenerate.append(node)
        return True

    def _fresh_emits(self, regenerate: list[torch.fx.Node]) -> dict[torch.fx.Node, str] | None:
        """Each node of ``regenerate``'s new line (:meth:`_fresh_emit`); None (refused) when one
        cannot be written alone."""
        emits: dict[torch.fx.Node, str] = {}
        for node in regenerate:
            emit = self._fresh_emit(node)
            if emit is None:
                return self._refuse(self.reason)
            emits[node] = emit
        return emits

    def _unwritable(self, node: torch.fx.Node) -> str:
        """Why the changed line of a known node cannot be rewritten alone ("" when it can)."""
        if node.op == "placeholder" or (node.op == "output" and (not self._output_editable or node.type is not None)):
            # A default or a return annotation: the def line changes.
            return f"{node.op} {node.name} changed"
        if node.meta.get("is_wrapped", False) and node.target is not self._generated[node][2]:
            # The ``wrap("...")`` lines above the function list the wrapped targets in use.
            return f"node {node.name} calls a wrapped function"
        return ""

    def _fresh_emit(self, node: torch.fx.Node) -> str | None:
        """``node``'s new line without its deletion suffix, as fx writes it; None (with
        :attr:`reason` set) when fx would not write it the same way inside the whole graph."""
        scratch = torch.fx.Graph()
        env: dict[torch.fx.Node, torch.fx.Node] = {}
        inputs = list(fx_compat.node_input_nodes(node))
        for value in inputs:
            placeholder = scratch.placeholder(value.name)
            if placeholder.name != value.name:
                self.reason = f"input {value.name} cannot be named alike"
                return None
            env[value] = placeholder
        copy = scratch.node_copy(node, env.__getitem__)
        if node.op != "output":
            if copy.name != node.name:
                self.reason = f"node {node.name} cannot be named alike"
                return None
            scratch.output(copy)
        else:
            # The return line is the code generator's (pytree-unflattening for exported graphs).
            fx_compat.set_graph_codegen(scratch, fx_compat.graph_codegen(self._graph))
        try:
            pc = scratch.python_code(root_module="self")
        except Exception as exc:  # noqa: BLE001 (a generator that cannot write this fragment)
            self.reason = f"node {node.name}: fx could not generate it alone ({type(exc).__name__})"
            return None
        for name, obj in pc.globals.items():
            if self._globals.get(name, _MISSING) is not obj:
                self.reason = f"node {node.name} needs a global the code does not have ({name})"
                return None
        line_map = fx_compat.code_line_map(pc)
        if line_map is None:
            self.reason = "fx gives no line map of its code"
            return None
        start = line_map[0] - 1
        mine = [key + start for key, i in line_map[1].items() if i == len(inputs)]
        lines = pc.src.split("\n")
        if not mine or any(lines[k].strip() for k in mine[1:]):
            self.reason = f"node {node.name} gives more than one line"
            return None
        text = lines[mine[0]]
        if node.op == "output":
            if not text.startswith("    return "):
                self.reason = "unexpected output line"
                return None
            return text
        suffix = _deletion_suffix([v.name for v in inputs])
        if not _defines(text, node.name) or not text.endswith(suffix):
            self.reason = f"node {node.name}: unexpected line {text!r}"
            return None
        return text[:len(text) - len(suffix)] if suffix else text
