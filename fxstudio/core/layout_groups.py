"""Module groups: which nodes a collapsed group swallows, and the nested frames around groups.

A node belongs to the group of its module path (``node.meta["fxs_module_path"]``) and to every
ancestor of it by dotted prefix (``layer1.0.conv1`` is in ``layer1.0`` and ``layer1``).
"""

from __future__ import annotations

import numpy as np

from fxstudio.core.layout_types import GroupBox


def ancestors(path: str) -> list[str]:
    """The group paths containing ``path``, outermost first, ending with ``path`` ('' has none)."""
    if not path:
        return []
    parts = path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def collapse_owner(paths: list[str], collapsed) -> list[str | None]:
    """For each node's module path, the outermost collapsed group containing it, or None."""
    if not collapsed:
        return [None] * len(paths)
    cache: dict[str, str | None] = {}
    out = []
    for p in paths:
        owner = cache.get(p, "")
        if owner == "":
            owner = next((a for a in ancestors(p) if a in collapsed), None)
            cache[p] = owner
        out.append(owner)
    return out


def class_names(stacks: list[list[tuple[str, str]]], paths: list[str]) -> dict[str, str]:
    """Module class name by group path, from the nodes' module stacks (first seen wins)."""
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
            names.setdefault(str(p), str(cls).rsplit(".", 1)[-1])
    return names


def group_label(path: str, classes: dict[str, str]) -> str:
    """A frame label: ``layer1.0 · BasicBlock``, or just the path when the class is unknown."""
    cls = classes.get(path)
    return f"{path} · {cls}" if cls else path


def build_groups(
    unit_paths: list[str], unit_boxes: np.ndarray, collapsed_units: dict[str, tuple[int, int]],
    classes: dict[str, str], pad: float = 12.0, label_room: float = 22.0,
) -> dict[str, GroupBox]:
    """Nested frames around the units of each module path.

    ``unit_paths[i]`` is the innermost module path of unit i (for a collapsed group's card, the
    group's own path) and ``unit_boxes[i]`` its (x0, y0, x1, y1). ``collapsed_units`` maps each
    collapsed path to (unit index, member count). Each frame encloses its members' boxes and its
    child frames with ``pad`` around and ``label_room`` above for the label.
    """
    by_path: dict[str, list[int]] = {}
    for i, p in enumerate(unit_paths):
        if p:
            by_path.setdefault(p, []).append(i)
    all_paths: set[str] = set()
    for p in by_path:
        all_paths.update(ancestors(p))
    boxes: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for p, members in by_path.items():
        idx = np.asarray(members)
        b = unit_boxes[idx]
        boxes[p] = [b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max()]
        counts[p] = len(members)
    for p, (unit, members) in collapsed_units.items():
        counts[p] = members
    groups: dict[str, GroupBox] = {}
    # Deepest first, so a parent's box includes its children's padded frames.
    for p in sorted(all_paths, key=lambda s: -s.count(".")):
        depth = p.count(".")
        if p in collapsed_units:
            x0, y0, x1, y1 = boxes[p]
            groups[p] = GroupBox(path=p, label=group_label(p, classes), x=x0, y=y0, w=x1 - x0, h=y1 - y0,
                                 depth=depth, collapsed=True, members=counts.get(p, 0))
        else:
            if p not in boxes:
                continue
            x0, y0, x1, y1 = boxes[p]
            x0, y0, x1, y1 = x0 - pad, y0 - pad - label_room, x1 + pad, y1 + pad
            groups[p] = GroupBox(path=p, label=group_label(p, classes), x=x0, y=y0, w=x1 - x0, h=y1 - y0,
                                 depth=depth, collapsed=False, members=counts.get(p, 0))
        parent = p.rsplit(".", 1)[0] if "." in p else ""
        if parent:
            g = groups[p]
            pb = boxes.get(parent)
            gb = [g.x, g.y, g.x + g.w, g.y + g.h]
            boxes[parent] = gb if pb is None else [min(pb[0], gb[0]), min(pb[1], gb[1]),
                                                   max(pb[2], gb[2]), max(pb[3], gb[3])]
            counts[parent] = counts.get(parent, 0) + g.members
    return groups
