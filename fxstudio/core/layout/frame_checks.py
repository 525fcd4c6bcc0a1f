"""``frame_problems``: what in a finished layout breaks the frame rule of ``frames.py`` (sibling
frames apart, every card inside its module's frames and in no other). Near-linear: the sibling
frames sweep by x, and each frame looks only at the cards whose top lies in its height (one search
in the cards sorted by top)."""

from __future__ import annotations

import numpy as np

from fxstudio.core.layout.groups import ancestors
from fxstudio.core.layout.types import Layout


def _frame_of(path: str, groups) -> str:
    for a in reversed(ancestors(path)):
        g = groups.get(a)
        if g is not None and not g.collapsed:
            return a
    return ""


def frame_problems(layout: Layout, graph) -> list[str]:
    """What breaks the frame rule in ``layout`` of ``graph``: sibling frames that overlap, a card
    outside its module's frame or inside a frame it does not belong to, an input inside a frame,
    a frame whose label names no class though a module stack names one ("Module"). Empty: all good."""
    from fxstudio.core.node_text import META_MODULE_PATH

    problems: list[str] = []
    groups = layout.groups
    rects = {p: (g.x, g.y, g.x + g.w, g.y + g.h) for p, g in groups.items()}
    by_parent: dict[str, list[str]] = {}
    for p in groups:
        by_parent.setdefault(p.rsplit(".", 1)[0] if "." in p else "", []).append(p)
    for sibs in by_parent.values():
        sibs = sorted(sibs, key=lambda q: rects[q][0])
        for i, a in enumerate(sibs):
            for b in sibs[i + 1:]:
                ra, rb = rects[a], rects[b]
                if rb[0] >= ra[2]:
                    break
                if ra[1] < rb[3] and rb[1] < ra[3]:
                    problems.append(f"frames {a!r} and {b!r} overlap")
    for p, g in groups.items():
        if g.label.endswith("· Module"):
            problems.append(f"frame {p!r} is labelled {g.label!r}: no class name")
    paths = {node.name: (node.meta.get(META_MODULE_PATH) or "", node.op) for node in graph.nodes}
    names = list(layout.nodes)
    if not names:
        return problems
    nb = np.asarray([(b.x, b.y, b.x + b.w, b.y + b.h) for b in layout.nodes.values()], dtype=np.float64)
    owns: list[set] = []
    found: list[tuple[int, int, str]] = []  # (card, frame, problem), sorted into card-then-frame order
    frame_ids = {p: k for k, p in enumerate(rects)}
    for i, name in enumerate(names):
        path, op = paths.get(name, ("", ""))
        own = "" if op == "placeholder" and not path else _frame_of(path, groups)
        inside = set(ancestors(own))
        owns.append(inside)
        x0, y0, x1, y1 = nb[i].tolist()
        for p in inside:
            r = rects.get(p)
            if r is not None and not (r[0] <= x0 + 1e-6 and r[1] <= y0 + 1e-6 and x1 <= r[2] + 1e-6 and y1 <= r[3] + 1e-6):
                found.append((i, frame_ids[p], f"card {name!r} is not inside its frame {p!r}"))
    # Cards drawn inside a frame they are not in: per frame, the cards whose top lies in the frame's
    # height (a search in the cards sorted by top), then a test on x.
    order = np.argsort(nb[:, 1], kind="stable")
    tops = nb[order, 1]
    tallest = float((nb[:, 3] - nb[:, 1]).max())
    for p, r in rects.items():
        lo = np.searchsorted(tops, r[1] - tallest, side="left")
        hi = np.searchsorted(tops, r[3], side="left")
        cand = order[lo:hi]
        b = nb[cand]
        hit = cand[(r[0] < b[:, 2]) & (b[:, 0] < r[2]) & (r[1] < b[:, 3]) & (b[:, 1] < r[3])]
        k = frame_ids[p]
        for i in hit.tolist():
            if p not in owns[i]:
                name = names[i]
                path, op = paths.get(name, ("", ""))
                what = "input" if op == "placeholder" else "card"
                found.append((i, k, f"{what} {name!r} ({path or 'no module'}) is drawn inside frame {p!r}"))
    found.sort(key=lambda t: (t[0], t[1]))
    problems.extend(msg for _, _, msg in found)
    return problems
