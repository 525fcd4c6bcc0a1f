"""Module groups: which nodes a collapsed group swallows, and the nested frames around groups.

A node belongs to the group of its module path (``node.meta["fxs_module_path"]``) and to every
ancestor of it by dotted prefix (``layer1.0.conv1`` is in ``layer1.0`` and ``layer1``).
"""

from __future__ import annotations

import functools

import numpy as np

from fxstudio.core.card_text import frame_relative, single_card_paths
from fxstudio.core.layout.types import GroupBox
from fxstudio.core.node_text import META_MODULE_PATH, META_MODULE_STACK, META_SHAPE, target_label


INNER_PAD = 5.0   # between a frame and the frames nested in it (its own cards get ``pad``)


@functools.lru_cache(maxsize=65536)
def _ancestors(path: str) -> tuple[str, ...]:
    if not path:
        return ()
    parts = path.split(".")
    return tuple(".".join(parts[: i + 1]) for i in range(len(parts)))


def ancestors(path: str) -> list[str]:
    """The group paths containing ``path``, outermost first, ending with ``path`` ('' has none)."""
    return list(_ancestors(path))


def collapse_owner(paths: list[str], collapsed) -> list[str | None]:
    """For each node's module path, the outermost collapsed group containing it, or None."""
    if not collapsed:
        return [None] * len(paths)
    collapsed = frozenset(collapsed)
    cache: dict[str, str | None] = {"": None}

    def owner(p: str) -> str | None:
        # Walk up to the nearest ancestor already known, then down: the outermost collapsed one
        # wins. Iterative: an archive's module path may have thousands of parts.
        chain = []
        while p not in cache:
            chain.append(p)
            p = p.rpartition(".")[0]
        found = cache[p]
        for q in reversed(chain):
            if found is None and q in collapsed:
                found = q
            cache[q] = found
        return found

    return [owner(p) for p in paths]


def class_names(stacks: list[list[tuple[str, str]]], paths: list[str]) -> dict[str, str]:
    """Module class name by group path, from the nodes' module stacks (the first one seen that
    names a class wins)."""
    names: dict[str, str] = {}
    seen: set[str] = set()
    for path, stack in zip(paths, stacks):
        if path in seen:
            continue
        seen.add(path)
        for entry in stack:
            try:
                p, cls = entry[0], entry[1]
            except (TypeError, IndexError):
                continue
            name = str(cls).rsplit(".", 1)[-1]
            if name and name != "Module":  # '' or a plain Module says nothing: a later stack may
                names.setdefault(str(p), name)
    return names


def group_label(path: str, classes: dict[str, str]) -> str:
    """A frame label: ``layer1.0 · BasicBlock``, or just the path when the class is unknown."""
    cls = classes.get(path)
    return f"{path} · {cls}" if cls else path


def frame_members(unit_paths: list[str], leaf_units: list[bool] | None = None,
                  group_units: list[bool] | None = None) -> dict[str, list[int]]:
    """Units directly inside each framed module path.

    ``unit_paths[i]`` is the innermost module path of unit i (for a collapsed group's card, the
    group's own path). A leaf module whose every node is a ``call_module`` of it (``leaf_units``)
    gets no frame, its card says it all; its cards count for the parent's frame instead. With
    ``group_units`` (which units are collapsed groups' cards), neither does a module whose frame
    would hold a single card and no other frame: the card names the module instead
    (``card_text.module_caption``), and a parent left with one card loses its frame in turn.
    """
    by_path: dict[str, list[int]] = {}
    for i, p in enumerate(unit_paths):
        if p:
            by_path.setdefault(p, []).append(i)
    if leaf_units is not None:
        has_children = {a for q in by_path for a in ancestors(q)[:-1]}
        for p in [p for p, members in by_path.items() if all(leaf_units[i] for i in members)]:
            if p not in has_children:
                _to_parent(by_path, p)
    if group_units is not None:
        for _ in range(64):   # one level of nesting per round
            has_children = {a for q in by_path for a in _ancestors(q)[:-1]}
            single = [p for p, m in by_path.items() if len(m) == 1 and not group_units[m[0]] and p not in has_children]
            if not single:
                break
            for p in single:
                _to_parent(by_path, p)
    return by_path


def _to_parent(by_path: dict[str, list[int]], path: str) -> None:
    """Drop the frame of ``path``: its units count for its parent's frame (for none at the top)."""
    members = by_path.pop(path)
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    if parent:
        by_path.setdefault(parent, []).extend(members)


def caption_lengths(paths: list[str], ops: list[str], collapsed, frames: dict[str, list[int]],
                    classes: dict[str, str]) -> dict[int, int]:
    """The call units whose module gets no frame because it holds them only (``frame_members`` left
    it out), so that their card names it (``card_text.module_caption``): unit index → the caption's
    length in characters.
    ``paths``/``ops``: each unit's module path and op; ``collapsed``: the paths shown as one card."""
    framed = set(collapsed)
    for p in frames:
        framed.update(_ancestors(p))
    single = single_card_paths(p for p, op in zip(paths, ops) if op != "group")
    by_path: dict[str, int] = {}
    out: dict[int, int] = {}
    for i, (path, op) in enumerate(zip(paths, ops)):
        if not path or (op != "call_function" and op != "call_method") or path in framed or path not in single:
            continue
        length = by_path.get(path)
        if length is None:
            parent = next((a for a in reversed(_ancestors(path)[:-1]) if a in framed), "")
            cls = classes.get(path)
            length = by_path[path] = len(frame_relative(path, parent)) + (3 + len(cls) if cls else 0)
        out[i] = length
    return out


def _per_path(by_path: dict[str, list[int]], lo_values: np.ndarray, hi_values: np.ndarray):
    """Minimum of ``lo_values`` and maximum of ``hi_values`` over each path's units, in dict order."""
    sizes = np.fromiter((len(m) for m in by_path.values()), dtype=np.int64, count=len(by_path))
    if len(sizes) == 0:
        return np.zeros(0), np.zeros(0)
    units = np.fromiter((u for m in by_path.values() for u in m), dtype=np.int64, count=int(sizes.sum()))
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return np.minimum.reduceat(lo_values[units], starts), np.maximum.reduceat(hi_values[units], starts)


def frame_structure(by_path: dict[str, list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For ``frame_gaps``: each (path of ``by_path``, ancestor) pair as index arrays (path index in
    dict order, ancestor index in first-seen order) and each ancestor's depth. Depends on the paths
    only, so a caller may keep it while the paths stay the same."""
    anc_index: dict[str, int] = {}
    depths: list[int] = []
    pi: list[int] = []
    ai: list[int] = []
    for i, p in enumerate(by_path):
        for q in _ancestors(p):
            j = anc_index.get(q)
            if j is None:
                j = anc_index[q] = len(depths)
                depths.append(q.count("."))
            pi.append(i)
            ai.append(j)
    return (np.asarray(pi, dtype=np.int64), np.asarray(ai, dtype=np.int64), np.asarray(depths, dtype=np.int64))


def frame_gaps(by_path: dict[str, list[int]], layer: np.ndarray, nlayers: int, base: float,
               pad: float = 12.0, label_room: float = 22.0, structure=None, inner: float = INNER_PAD) -> np.ndarray:
    """Gap below each layer, wide enough for the frames that close above it and open below it
    (nested ones ``inner`` apart, as ``build_groups`` draws them).

    ``structure``: ``frame_structure(by_path)`` when the caller kept it."""
    gaps = np.full(max(nlayers, 1), base)
    if not by_path or nlayers < 2:
        return gaps
    pi, ai, depth = structure if structure is not None else frame_structure(by_path)
    mins, maxs = _per_path(by_path, layer, layer)
    nanc = len(depth)
    lo = np.full(nanc, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(nanc, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(lo, ai, mins.astype(np.int64)[pi])
    np.maximum.at(hi, ai, maxs.astype(np.int64)[pi])
    span = int(depth.max()) + 1

    def distinct_depths(at: np.ndarray) -> np.ndarray:
        pairs = np.unique(at * span + depth)
        return np.bincount(pairs // span, minlength=nlayers + 1)

    closing = distinct_depths(hi)
    opening = distinct_depths(lo)
    close, open_ = closing[: nlayers - 1], opening[1:nlayers]
    need = (16 + np.where(close > 0, pad + inner * (close - 1), 0.0)
            + np.where(open_ > 0, pad + label_room + (inner + label_room) * (open_ - 1), 0.0))
    gaps[: nlayers - 1] = np.maximum(base, need)
    return gaps


def group_plan(by_path: dict[str, list[int]], collapsed_units, classes: dict[str, str]) -> list[tuple]:
    """Every frame path with its depth, parent path ('' for none) and label, deepest first: what
    ``build_groups`` walks. Depends on the paths (and class names) only, not on positions."""
    all_paths: set[str] = set()
    for p in by_path:
        all_paths.update(_ancestors(p))
    all_paths.update(collapsed_units)
    return [(p, p.count("."), p.rsplit(".", 1)[0] if "." in p else "", group_label(p, classes))
            for p in sorted(all_paths, key=lambda s: -s.count("."))]


def build_groups(
    by_path: dict[str, list[int]], unit_boxes: np.ndarray, collapsed_units: dict[str, tuple[int, int]],
    classes: dict[str, str], pad: float = 12.0, label_room: float = 22.0, plan: list | None = None,
    inner: float = INNER_PAD,
) -> dict[str, GroupBox]:
    """Nested frames around the units of each module path (``frame_members``).

    ``unit_boxes[i]`` is unit i's (x0, y0, x1, y1); ``collapsed_units`` maps each collapsed path to
    (unit index, member count). Each frame encloses its members' boxes with ``pad`` around (room for
    their ports and edges), its child frames with ``inner`` around (nested frames stay close), and
    ``label_room`` above for the label. ``plan``: ``group_plan(by_path, collapsed_units, classes)``
    when the caller kept it (it depends on the paths only).
    """
    if plan is None:
        plan = group_plan(by_path, collapsed_units, classes)
    cards: dict[str, list[float]] = {}   # the box of each path's own units
    kids: dict[str, list[float]] = {}    # the box of its child frames
    counts: dict[str, int] = {}
    x0s, _ = _per_path(by_path, unit_boxes[:, 0], unit_boxes[:, 0])
    y0s, _ = _per_path(by_path, unit_boxes[:, 1], unit_boxes[:, 1])
    _, x1s = _per_path(by_path, unit_boxes[:, 2], unit_boxes[:, 2])
    _, y1s = _per_path(by_path, unit_boxes[:, 3], unit_boxes[:, 3])
    for p, a, b, c, d in zip(by_path, x0s.tolist(), y0s.tolist(), x1s.tolist(), y1s.tolist()):
        cards[p] = [a, b, c, d]
        counts[p] = len(by_path[p])
    for p, (unit, members) in collapsed_units.items():
        counts[p] = members
    groups: dict[str, GroupBox] = {}
    # Deepest first, so a parent's box includes its children's padded frames.
    for p, depth, parent, label in plan:
        if p in collapsed_units:
            x0, y0, x1, y1 = cards[p]
            g = groups[p] = GroupBox(path=p, label=label, x=x0, y=y0, w=x1 - x0, h=y1 - y0,
                                     depth=depth, collapsed=True, members=counts.get(p, 0))
        else:
            b, k = cards.get(p), kids.get(p)
            if b is None and k is None:
                continue
            grown = [_grown(box, m) for box, m in ((b, pad), (k, inner)) if box is not None]
            x0, y0 = min(g[0] for g in grown), min(g[1] for g in grown) - label_room
            x1, y1 = max(g[2] for g in grown), max(g[3] for g in grown)
            g = groups[p] = GroupBox(path=p, label=label, x=x0, y=y0, w=x1 - x0, h=y1 - y0,
                                     depth=depth, collapsed=False, members=counts.get(p, 0))
        if parent:
            pb = kids.get(parent)
            gb = [g.x, g.y, g.x + g.w, g.y + g.h]
            kids[parent] = gb if pb is None else [min(pb[0], gb[0]), min(pb[1], gb[1]),
                                                  max(pb[2], gb[2]), max(pb[3], gb[3])]
            counts[parent] = counts.get(parent, 0) + g.members
    return groups


def _grown(box: list[float], margin: float) -> tuple[float, float, float, float]:
    return (box[0] - margin, box[1] - margin, box[2] + margin, box[3] + margin)


def _signature(path: str, members: list, classes: dict[str, str]) -> tuple:
    """Structure of a group: its class and, per member in graph order, op, relative target and
    where each input comes from (a member index, or outside)."""
    from fxstudio.core.layout.graph_model import node_inputs

    index = {node: i for i, node in enumerate(members)}
    prefix = path + "."
    items = []
    for node in members:
        target = target_label(node)
        if node.op in ("call_module", "get_attr") and target.startswith(prefix):
            target = target[len(prefix):]
        elif node.op == "placeholder":
            target = ""  # a lifted parameter's name spells its path
        inner = node.meta.get(META_MODULE_PATH) or ""
        rel = inner[len(prefix):] if inner.startswith(prefix) else ""
        inputs = tuple((index.get(src, -1), key) for src, key in node_inputs(node))
        item = (node.op, target, rel, inputs, node.meta.get(META_SHAPE))
        try:
            hash(item)
        except TypeError:  # a multi-output node's list of shapes: rare, so frozen only then
            item = _frozen(item)
        items.append(item)
    return (classes.get(path), tuple(items))


def _frozen(value):
    """``value`` with its lists (a multi-output node's shapes, a list-valued input key) as tuples,
    so a signature is hashable."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    return value


def repeated_groups(graph) -> list[list[str]]:
    """Sibling module groups with identical structure (the N layers of a transformer), so a view
    can fold them: lists of paths, each list of two or more, in graph order. Only the outermost
    repeats are listed (the attention blocks inside repeated layers are not listed again)."""
    members: dict[str, list] = {}
    stacks, paths = [], []
    for node in graph.nodes:
        path = node.meta.get(META_MODULE_PATH) or ""
        stacks.append(node.meta.get(META_MODULE_STACK) or [])
        paths.append(path)
        for a in ancestors(path):
            members.setdefault(a, []).append(node)
    classes = class_names(stacks, paths)
    by_key: dict[tuple, list[str]] = {}
    for path, nodes in members.items():
        parent = path.rsplit(".", 1)[0] if "." in path else ""
        by_key.setdefault((parent, _signature(path, nodes, classes)), []).append(path)
    repeats = [paths_ for paths_ in by_key.values() if len(paths_) > 1]
    in_repeat = {p for r in repeats for p in r}
    outermost = [r for r in repeats if not any(a in in_repeat for a in ancestors(r[0])[:-1])]
    order = {p: i for i, p in enumerate(members)}
    return sorted(outermost, key=lambda r: order[r[0]])
