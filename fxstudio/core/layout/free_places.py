"""Where a card fits in a finished layout (``local_relayout``): the free stretches of a layer
(``reroute.Placement.row``), a place in them nearest an x, the frames a card must be inside and out
of, and ``Placement``'s sorted card and lane intervals with one card put in or taken out."""

from __future__ import annotations

import bisect

import numpy as np

from fxstudio.core.layout.reroute import Placement

FRAME_PAD = 12.0     # a card keeps this far inside its module's frame (``build_groups``' pad)


def cards_row(place: Placement, lyr: int) -> tuple[list, list]:
    """The taken x-intervals of layer ``lyr`` from cards and lanes only (not routes a reroute added)."""
    saved = place.rows.pop(lyr, None)
    got = place.row(lyr)
    if saved is not None:
        place.rows[lyr] = saved
    else:
        place.rows.pop(lyr, None)
    return got


def fits(lefts: list, rights: list, a: float, b: float) -> bool:
    """Whether [a, b] meets none of the sorted, merged intervals."""
    k = bisect.bisect_right(lefts, b) - 1
    return k < 0 or rights[k] <= a


def free_centres(lefts: list, rights: list, half: float, want: float):
    """Centres of free stretches at least ``2 * half`` wide, nearest ``want`` first."""
    gaps = [(-np.inf, lefts[0])] if lefts else [(-np.inf, np.inf)]
    gaps += list(zip(rights, lefts[1:])) + ([(rights[-1], np.inf)] if rights else [])
    out = []
    for a, b in gaps:
        if b - a >= 2 * half:
            c = min(max(want, a + half), b - half)
            out.append((abs(c - want), c))
    out.sort()
    return [c for _, c in out]


def framed_right(chain, frames, paths, x: float, y: float, w: float, h: float) -> bool:
    """Whether a card at (x, y, w, h) lies inside every frame of ``chain`` and in no other frame."""
    if chain is None:
        return False
    if not len(frames):
        return not chain
    x0, y0, x1, y1 = frames[:, 0], frames[:, 1], frames[:, 2], frames[:, 3]
    meets = (x0 < x + w) & (x < x1) & (y0 < y + h) & (y < y1)
    inside = (x0 + FRAME_PAD <= x + 1e-6) & (x + w <= x1 - FRAME_PAD + 1e-6) & (y0 <= y) & (y + h <= y1)
    want = set(chain)
    for k in np.flatnonzero(meets | inside).tolist():
        if paths[k] in want:
            if not inside[k]:
                return False
            want.discard(paths[k])
        else:
            return False
    return not want


def with_interval(rows: tuple, lyr: int, lo: float, hi: float) -> tuple:
    """``Placement._sorted`` (layers, lefts, rights) with a card's interval [lo, hi] in layer ``lyr`` put in."""
    layers, los, his = rows
    at = int(np.searchsorted(layers, lyr, side="right"))
    return np.insert(layers, at, lyr), np.insert(los, at, lo), np.insert(his, at, hi)


def without_interval(rows: tuple, lyr: int, lo: float) -> tuple:
    """``Placement._sorted`` without the interval of layer ``lyr`` starting at ``lo`` (an erased card's)."""
    layers, los, his = rows
    a, b = np.searchsorted(layers, [lyr, lyr + 1]).tolist()
    hit = np.flatnonzero(np.abs(los[a:b] - lo) < 1e-6)
    if not len(hit):
        return rows
    k = a + int(hit[0])
    return np.delete(layers, k), np.delete(los, k), np.delete(his, k)
