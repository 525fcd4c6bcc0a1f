"""The measuring run behind ``compute_metrics``: the original graph runs once and keeps each node's
value (the reference); the edited graph then runs node by node, and each node is

- compared with its counterpart's value as it comes out of the whole edited run (the accumulated
  error, and the SQNR of that value against the reference);
- run again on the *reference's* input values, as torch.ao's Numeric Suite shadow loggers feed a
  shadow module, and compared with the counterpart (the isolated error: what this node alone adds);
- timed (median of ``repeats`` calls on the run device, synchronised around each call on cuda) and
  measured (bytes its outputs hold; on cuda the peak allocation while it runs, from
  ``torch.cuda.max_memory_allocated``), the idea of torch.fx's profiling Interpreter. When time is
  measured the edited module first runs a few times whole, so kernels' first-call set-up is not timed.

Both graphs run as ``torch.fx.Interpreter`` steps on copies moved to the run device (the
document's modules are never written), in eval mode unless told otherwise, under ``no_grad``.
The reference values are held for the whole run: memory is about one run's intermediates.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.compare import RunCancelled, inputs_for_run, module_for_run, pair_graphs, parse_run_dtype
from fxstudio.core.errors import RunError
from fxstudio.core.inplace_ops import clone_tensors, mutating_nodes
from fxstudio.core.module_state import copy_to_run
from fxstudio.core.node_text import META_ID
from fxstudio.core.overlays.node_metrics import MEASURED, NodeMetrics

ProgressFn = Callable[[float, str], None]
NOT_RUN = ("placeholder", "output", "get_attr")
WARM_UP_RUNS = 3   # whole runs of the edited module before timing (oneDNN kernels settle after a few calls)


def compute_metrics(original: torch.fx.GraphModule, edited: torch.fx.GraphModule, inputs: tuple[Any, ...], *,
                    metrics: Iterable[str] = MEASURED, device: str = "cpu", dtype: str | None = None,
                    repeats: int = 5, match: str = "id", seed: int | None = 0, eval_mode: bool = True,
                    progress: ProgressFn | None = None, cancel: Any = None) -> NodeMetrics:
    """Measure ``metrics`` (keys of ``METRICS``) for every node of ``edited`` run on ``inputs``.

    ``match``: how an edited node finds its counterpart in ``original``: ``"id"`` (stable ids, a
    document's graphs), ``"name"``, or ``"structure"`` (an exported file traced again). Nodes
    without a counterpart (inserted by an edit) have no error or SQNR; ``placeholder``,
    ``get_attr`` and ``output`` nodes are not timed. ``cancel``: a callable or ``threading.Event``;
    raises ``RunCancelled`` once it is set, ``RunError`` naming the node when a node raises.
    """
    wanted = set(metrics)
    unknown = wanted - set(MEASURED)
    if unknown:
        raise RunError(f"Unknown metric {sorted(unknown)[0]!r}: one of {', '.join(MEASURED)}.")
    if repeats < 1:
        raise RunError("repeats must be at least 1.")
    run_dtype = parse_run_dtype(dtype)
    memo: dict[int, Any] = {}
    modules = []
    for gm in (original, edited):
        moved = copy_to_run(module_for_run(gm, device, run_dtype, memo=memo), force=eval_mode)
        modules.append(_in_eval_mode(moved) if eval_mode else moved)
    args = inputs_for_run(tuple(inputs), device, run_dtype)
    partner = counterparts(original, edited, match)
    reference: dict[torch.fx.Node, Any] = {}
    needs_reference = bool(wanted & {"error", "isolated", "sqnr"})
    with torch.no_grad():
        if needs_reference:
            _reseed(seed)
            _Recorder(modules[0], set(partner.values()), reference).run(*args)
        if "time" in wanted:   # the first calls of a kernel pay set-up costs the timed ones should not
            for _ in range(WARM_UP_RUNS):
                _reseed(seed)
                modules[1](*args)
        _reseed(seed)
        measurer = _Measurer(modules[1], wanted, partner, reference, torch.device(device), repeats, progress, cancel)
        measurer.run(*args)
    result = NodeMetrics(device=str(device), repeats=repeats if "time" in wanted else 0)
    for key in MEASURED:
        if key in wanted:
            result.set_metric(key, measurer.values[key], edited.graph)
    if measurer.refused:
        shown = ", ".join(measurer.refused[:5]) + (", …" if len(measurer.refused) > 5 else "")
        result.notes.append(f"no isolated error for {len(measurer.refused)} node(s) that raise on the original's "
                            f"input values: {shown}")
    inserted = sum(1 for n in edited.graph.nodes if n.op not in NOT_RUN and n not in partner)
    if inserted and needs_reference:
        result.notes.append(f"{inserted} node(s) without a counterpart in the original have no error or SQNR")
    return result


def counterparts(original: torch.fx.GraphModule, edited: torch.fx.GraphModule, match: str) -> dict[torch.fx.Node, torch.fx.Node]:
    """Edited node -> its original counterpart, by stable id, by name or by structure."""
    if match == "structure":
        return dict(pair_graphs(original, edited).pairs)
    if match not in ("id", "name"):
        raise RunError(f"match must be 'id', 'name' or 'structure', not {match!r}")
    key = (lambda n: n.meta.get(META_ID)) if match == "id" else (lambda n: n.name)
    by_key = {key(n): n for n in original.graph.nodes if key(n) is not None}
    return {n: by_key[key(n)] for n in edited.graph.nodes if key(n) is not None and key(n) in by_key}


def tensors_of(value: Any) -> list[torch.Tensor]:
    """The tensors inside a node's value (a tensor, or containers of them), in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    return [v for v in fx_compat.tree_leaves(value) if isinstance(v, torch.Tensor)]


def output_bytes(value: Any) -> int:
    """Bytes held by the tensors of a node's value (elements x element size)."""
    return sum(t.numel() * t.element_size() for t in tensors_of(value))


def difference(value: Any, ref: Any) -> tuple[float, float, float] | None:
    """``(max |value - ref|, sum ref^2, sum (ref - value)^2)`` over the tensors of both (float64);
    None when neither holds a tensor. Another shape or count gives an infinite error and noise;
    NaN where both are NaN counts as equal, NaN on one side as infinitely far."""
    xs, rs = tensors_of(value), tensors_of(ref)
    if not xs and not rs:
        return None
    if len(xs) != len(rs):
        return math.inf, 0.0, math.inf
    worst = signal = noise = 0.0
    for x, r in zip(xs, rs):
        x, r = (t.dequantize() if t.is_quantized else t for t in (x, r))
        if x.shape != r.shape:
            return math.inf, signal, math.inf
        if x.numel() == 0:
            continue
        x64, r64 = x.detach().to(torch.float64), r.detach().to(x.device, torch.float64)
        d = torch.where((x64 == r64) | (torch.isnan(x64) & torch.isnan(r64)), 0.0, (x64 - r64).abs())
        d = torch.nan_to_num(d, nan=math.inf)
        worst = max(worst, float(d.max()))
        signal += float(torch.nan_to_num(r64, nan=0.0).square().sum())
        noise += float(d.square().sum())
    return worst, signal, noise


def sqnr_db(signal: float, noise: float) -> float:
    """``10 log10(signal / noise)``: ``inf`` for equal values (no noise), ``-inf`` for a zero signal
    or an infinite noise (another shape, NaN on one side)."""
    if noise == 0:
        return math.inf
    if signal == 0 or math.isinf(noise):
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def _in_eval_mode(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` (a run copy) switched to eval mode; an exported program's module, which refuses
    ``eval()``, runs as it is (its graph fixed the mode when it was exported)."""
    try:
        return module.eval()
    except NotImplementedError:
        return module


def _reseed(seed: int | None) -> None:
    if seed is not None:
        torch.manual_seed(seed)


def _is_cancelled(cancel: Any) -> bool:
    if cancel is None:
        return False
    return cancel.is_set() if hasattr(cancel, "is_set") else bool(cancel())


def _failed(graph: str, node: torch.fx.Node, exc: Exception) -> RunError:
    message = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    return RunError(f"The {graph} graph raised at node {node.name}: {type(exc).__name__}: {message}")


class _Recorder(torch.fx.Interpreter):
    """Runs the original graph and keeps the value of each node in ``keep`` (copied when a later
    node may write into it in place)."""

    def __init__(self, gm: torch.fx.GraphModule, keep: set[torch.fx.Node], values: dict):
        super().__init__(gm)
        self.keep, self.values = keep, values
        self.copy = bool(mutating_nodes(gm))

    def run_node(self, n: torch.fx.Node) -> Any:
        """Run ``n`` (Interpreter override) and keep its value."""
        try:
            out = super().run_node(n)
        except Exception as exc:  # noqa: BLE001 - one line for the user, naming the node
            raise _failed("original", n, exc) from None
        if n in self.keep:
            self.values[n] = clone_tensors(out) if self.copy else out
        return out


class _Measurer(torch.fx.Interpreter):
    """Runs the edited graph node by node, measuring each node (module docstring)."""

    def __init__(self, gm: torch.fx.GraphModule, wanted: set[str], partner: dict, reference: dict,
                 device: torch.device, repeats: int, progress: ProgressFn | None, cancel: Any):
        super().__init__(gm)
        self.wanted, self.partner, self.reference = wanted, partner, reference
        self.cuda = device.type == "cuda"
        self.device = device
        self.repeats = repeats
        self.progress, self.cancel = progress, cancel
        self.mutating = mutating_nodes(gm)
        self.values: dict[str, dict[str, float]] = {k: {} for k in MEASURED}
        self.refused: list[str] = []   # nodes that raised when fed the original's values
        self.total = max(1, len(gm.graph.nodes))
        self.step = max(1, self.total // 100)
        self.index = 0

    def run_node(self, n: torch.fx.Node) -> Any:
        """Run ``n`` (Interpreter override), measuring it."""
        self.index += 1
        if self.index % self.step == 0:
            if _is_cancelled(self.cancel):
                raise RunCancelled("The measurement was cancelled.")
            if self.progress is not None:
                self.progress(self.index / self.total, f"measuring {n.name}")
        if n.op in NOT_RUN:
            return super().run_node(n)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        out = self._timed_run(n, args, kwargs)
        ref_node = self.partner.get(n)
        if ref_node is not None and ref_node in self.reference:
            self._compare(n, out, args, kwargs, self.reference[ref_node])
        return out

    def _call(self, n: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
        try:
            return getattr(self, n.op)(n.target, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - one line for the user, naming the node
            raise _failed("edited", n, exc) from None

    def _timed_run(self, n: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
        """The node's value; its time (median of the repeats; a node writing in place runs once)
        and memory when asked."""
        sync = torch.cuda.synchronize if self.cuda else (lambda *a: None)
        before = 0
        if self.cuda and "memory" in self.wanted:
            sync(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            before = torch.cuda.memory_allocated(self.device)
        sync(self.device)
        start = time.perf_counter_ns()
        out = self._call(n, args, kwargs)
        sync(self.device)
        times = [time.perf_counter_ns() - start]
        if "memory" in self.wanted:
            peak = torch.cuda.max_memory_allocated(self.device) - before if self.cuda else 0
            self.values["memory"][n.name] = float(max(peak, output_bytes(out)))
        if "time" in self.wanted:
            if n not in self.mutating and self.repeats > 1:
                times = []
                for _ in range(self.repeats):
                    sync(self.device)
                    start = time.perf_counter_ns()
                    self._call(n, args, kwargs)
                    sync(self.device)
                    times.append(time.perf_counter_ns() - start)
            self.values["time"][n.name] = statistics.median(times) / 1e6
        return out

    def _compare(self, n: torch.fx.Node, out: Any, args: tuple, kwargs: dict, ref: Any) -> None:
        found = difference(out, ref)
        if found is not None:
            worst, signal, noise = found
            if "error" in self.wanted:
                self.values["error"][n.name] = worst
            if "sqnr" in self.wanted:
                self.values["sqnr"][n.name] = sqnr_db(signal, noise)
        if "isolated" not in self.wanted:
            return
        iargs, ikwargs = torch.fx.map_arg((n.args, n.kwargs), self._reference_input)
        if n in self.mutating:
            iargs, ikwargs = clone_tensors((iargs, ikwargs))
        try:
            isolated = difference(self._call(n, tuple(iargs), dict(ikwargs)), ref)
        except RunError:   # the node does not take the original's values (an edit changed a shape upstream)
            self.refused.append(n.name)
            return
        if isolated is not None:
            self.values["isolated"][n.name] = isolated[0]

    def _reference_input(self, arg: torch.fx.Node) -> Any:
        """An input as the original computed it, where it has a counterpart; else the edited value."""
        ref_node = self.partner.get(arg)
        if ref_node is not None and ref_node in self.reference:
            return self.reference[ref_node]
        return self.env[arg]
