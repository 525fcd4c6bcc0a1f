"""The verdict of a reduced subgraph: does the edited one still diverge from the original, or still
raise the same exception?

These functions need torch alone: the reduction calls them on every candidate subgraph, and the
repro file carries their source text (``repro_file``), so a candidate and the written file are
judged by the same code.
"""

import torch


def first_line(error):
    """An exception's message up to its first line break (torch appends context after it)."""
    text = str(error).strip().split("\n\nWhile executing")[0].strip()
    return text.splitlines()[0] if text else type(error).__name__


def value_gap(reference, value, rtol, atol):
    """``(max abs error, beyond tolerance, what else differs)`` of ``value`` against ``reference``:
    tensors, numbers, None or tuples and lists of them. NaN where both hold NaN counts as equal."""
    if isinstance(reference, (tuple, list)) and isinstance(value, (tuple, list)):
        if len(reference) != len(value):
            return float("inf"), True, f"{len(value)} items instead of {len(reference)}"
        worst = (0.0, False, "")
        for ref, val in zip(reference, value):
            gap = value_gap(ref, val, rtol, atol)
            if (gap[1], gap[0]) > (worst[1], worst[0]):
                worst = gap
        return worst
    if isinstance(reference, torch.Tensor) and isinstance(value, torch.Tensor):
        if reference.shape != value.shape:
            return float("inf"), True, f"shape {tuple(value.shape)} instead of {tuple(reference.shape)}"
        ref = reference.detach()
        val = value.detach()
        ref = (ref.dequantize() if ref.is_quantized else ref).to("cpu", torch.float64)
        val = (val.dequantize() if val.is_quantized else val).to("cpu", torch.float64)
        diff = (val - ref).abs()
        diff = torch.where(ref.isnan() & val.isnan(), torch.zeros_like(diff), diff)
        diff = torch.where(diff.isnan(), torch.full_like(diff, float("inf")), diff)
        beyond = bool((diff > atol + rtol * ref.abs()).any())
        biggest = float(diff.max()) if diff.numel() else 0.0
        note = "" if reference.dtype == value.dtype else f"dtype {value.dtype} instead of {reference.dtype}"
        return biggest, beyond, note
    if isinstance(reference, (int, float, bool)) and isinstance(value, (int, float, bool)):
        biggest = abs(float(value) - float(reference))
        return biggest, not biggest <= atol + rtol * abs(float(reference)), ""
    if reference == value:
        return 0.0, False, ""
    return float("inf"), True, f"{value!r} instead of {reference!r}"


def judge(expected, reference, value, error, rtol, atol):
    """``(reproduces, one line saying what happened)`` for the edited subgraph's ``value`` (or the
    ``error`` it raised) against the original subgraph's ``reference``. ``expected`` is
    ``{"kind": "divergence"}`` or ``{"kind": "exception", "type": NAME, "message": FIRST_LINE}``."""
    if expected["kind"] == "exception":
        want = f"{expected['type']}: {expected['message']}"
        if error is None:
            return False, f"not reproduced: the edited subgraph ran without raising (expected {want})"
        got = f"{type(error).__name__}: {first_line(error)}"
        if got != want:
            return False, f"not reproduced: the edited subgraph raised {got} (expected {want})"
        return True, f"reproduced: the edited subgraph raises {got}"
    if error is not None:
        return False, f"not reproduced: the edited subgraph raised {type(error).__name__}: {first_line(error)}"
    biggest, beyond, note = value_gap(reference, value, rtol, atol)
    what = f"max abs error {biggest:.6g}" + (f", {note}" if note else "")
    if beyond:
        return True, f"reproduced: the edited subgraph diverges from the original ({what}; rtol {rtol:g}, atol {atol:g})"
    return False, f"not reproduced: within tolerance ({what}; rtol {rtol:g}, atol {atol:g})"
