"""Run the original and the edited model on the same inputs and say where they differ.

``compare_models`` runs three things on one device and dtype: the module as loaded, the traced
original graph (does tracing itself change anything?) and the edited graph. It reports per-output
errors and timings, and, with ``per_node``, the lockstep node-by-node comparison of
``fxstudio.core.compare.divergence`` naming the first node whose value leaves the tolerance.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.compare.meta_weights import refuse_meta_weights
from fxstudio.core.compare.divergence import (
    DivergenceResult, NodeDivergence, NodeFailure, RunCancelled, _is_oom, clone_tensors, graph_may_mutate,
    run_divergence,
)
from fxstudio.core.compare.node_pairing import pair_graphs
from fxstudio.core.errors import RunError
from fxstudio.core.threads import ThreadChoice, choose_for, torch_threads
from fxstudio.core.module_state import CannotCopy, run_copy, tensors_at, writes_buffers, written_paths
from fxstudio.core.compare.run_inputs import dtype_name, inputs_for_run, module_for_run, parse_run_dtype
from fxstudio.core.compare.run_metrics import diff_values, flatten_outputs, median_time_ms, reseed, sample_pair

__all__ = ["available_devices", "compare_models", "CompareReport", "OutputMetrics", "NodeDivergence",
           "NodeFailure", "RunCancelled"]


AUTO_REPEATS = 5
AUTO_BUDGET_S = 0.05
"""By default each model is timed up to ``AUTO_REPEATS`` times, stopping once its timed runs took
this long: a 40 ms forward is timed twice, not five (the whole compare stays near the cost
of the runs it compares; issue #25)."""


def available_devices() -> list[str]:
    """Devices a run can use here: ``cpu``, then every ``cuda:N``, then ``mps`` when present."""
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def check_device(device: str | torch.device) -> str:
    """``device`` as a canonical string if a run can use it here, else a ``RunError`` listing the choices."""
    choices = ", ".join(available_devices())
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise RunError(f"{device!r} is not a device name; available here: {choices}.") from None
    if dev.type == "cpu":
        return "cpu"
    name = f"{dev.type}:{dev.index or 0}" if dev.type == "cuda" else dev.type
    if name not in available_devices():
        raise RunError(f"The device {str(device)!r} is not available here; available: {choices}.")
    return name


@dataclass
class OutputMetrics:
    """One flattened output (``out[0]['logits']``) of a run against the reference run."""

    path: str
    shape: tuple[int, ...] | None
    dtype: str | None
    max_abs: float | None
    max_rel: float | None
    allclose: bool
    cosine: float | None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (non-finite figures become null)."""
        f = lambda x: x if x is not None and math.isfinite(x) else None  # noqa: E731
        return {"path": self.path, "shape": list(self.shape) if self.shape is not None else None,
                "dtype": self.dtype, "max_abs": f(self.max_abs), "max_rel": f(self.max_rel),
                "allclose": self.allclose, "cosine": f(self.cosine), "note": self.note}


@dataclass
class CompareReport:
    """Everything one comparison found. ``outputs`` compare the edited graph with the module as
    loaded; ``trace_outputs`` the traced original graph with it. ``divergence_by_id`` maps each
    edited node's stable id to its tolerance score (``<= 1`` within tolerance, ``inf`` for another
    shape; inserted nodes are absent): the canvas colours nodes by it."""

    device: str
    dtype: str | None
    rtol: float
    atol: float
    outputs: list[OutputMetrics] = field(default_factory=list)
    trace_outputs: list[OutputMetrics] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    nodes: list[NodeDivergence] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    first_divergence: NodeDivergence | None = None
    error: NodeFailure | None = None
    divergence_by_id: dict[int, float] = field(default_factory=dict)
    samples: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    per_node: bool = True

    @property
    def all_close(self) -> bool:
        """True when the edited run succeeded and every output is within tolerance."""
        return self.error is None and bool(self.outputs) and all(o.allclose for o in self.outputs)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON data (what ``fxstudio compare --json`` prints)."""
        return {
            "device": self.device, "dtype": self.dtype, "rtol": self.rtol, "atol": self.atol,
            "all_close": self.all_close,
            "outputs": [o.to_json() for o in self.outputs],
            "trace_outputs": [o.to_json() for o in self.trace_outputs],
            "timings_ms": {k: (v if math.isfinite(v) else None) for k, v in self.timings_ms.items()},
            "first_divergence": self.first_divergence.to_json() if self.first_divergence else None,
            "error": _failure_json(self.error),
            "nodes": [n.to_json() for n in self.nodes] if self.per_node else None,
            "removed": list(self.removed),
            "notes": list(self.notes),
        }

    def format_text(self) -> str:
        """A human-readable summary: outputs table, timings, first divergence or error."""
        lines = [f"device {self.device}, dtype {self.dtype or 'as loaded'}, rtol {self.rtol:g}, atol {self.atol:g}"]
        if self.outputs:
            lines.append("")
            lines.append(f"{'output':<24} {'shape':<16} {'max abs':>10} {'max rel':>10} {'cosine':>10}  allclose")
            for o in self.outputs:
                shape = "×".join(map(str, o.shape)) if o.shape is not None else "-"
                lines.append(f"{o.path:<24} {shape:<16} {_num(o.max_abs):>10} {_num(o.max_rel):>10} "
                             f"{_num(o.cosine, '.6f'):>10}  {'yes' if o.allclose else 'NO'}"
                             + (f"  ({o.note})" if o.note else ""))
        traced_off = [o for o in self.trace_outputs if not (o.max_abs == 0.0)]
        if self.trace_outputs:
            lines.append("")
            if traced_off:
                worst = max((o.max_abs or 0.0) for o in traced_off)
                lines.append(f"tracing changed the outputs: traced graph vs module as loaded, max abs {_num(worst)}")
            else:
                lines.append("tracing changed nothing: the traced graph matches the module as loaded exactly")
        if self.timings_ms:
            lines.append("time (median): " + ", ".join(f"{k} {v:.3f} ms" for k, v in self.timings_ms.items()))
        if self.per_node:
            inserted = sum(1 for n in self.nodes if n.status == "no_counterpart")
            extra = f"; {inserted} inserted (no counterpart)" if inserted else ""
            extra += f"; {len(self.removed)} removed" if self.removed else ""
            if self.first_divergence is not None:
                fd = self.first_divergence
                lines.append(f"first divergence: node {fd.name} ({fd.op} {fd.target}), max abs {_num(fd.max_abs)}"
                             + (f", {fd.note}" if fd.note else "") + extra)
                diverged = sum(1 for n in self.nodes if n.status == "diverged")
                lines.append(f"{diverged} of {len(self.nodes)} nodes diverge beyond tolerance")
            elif self.error is None:
                lines.append(f"no node diverges beyond tolerance ({len(self.nodes)} nodes compared{extra})")
        if self.error is not None:
            lines.append("error: " + self.error.describe())
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _num(x: float | None, fmt: str = ".3g") -> str:
    return "-" if x is None else format(x, fmt)


def _failure_json(f: NodeFailure | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {"graph": f.graph, "node": f.node_name, "id": f.node_id, "op": f.op, "target": f.target,
            "message": f.message, "out_of_memory": f.out_of_memory, "source": f.source}


def _output_metrics(ref: Any, new: Any, *, rtol: float, atol: float) -> list[OutputMetrics]:
    ref_leaves = dict(flatten_outputs(ref))
    new_leaves = flatten_outputs(new)
    rows = []
    for path, value in new_leaves:
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else None
        dt = dtype_name(value.dtype) if isinstance(value, torch.Tensor) else None
        if path not in ref_leaves:
            rows.append(OutputMetrics(path, shape, dt, None, None, False, None, "no such output in the original"))
            continue
        d = diff_values(ref_leaves.pop(path), value, rtol=rtol, atol=atol)
        if d is None:
            rows.append(OutputMetrics(path, shape, dt, 0.0, 0.0, True, None, "equal (not a tensor)"))
        else:
            rows.append(OutputMetrics(path, shape, dt, d.max_abs, d.max_rel, d.allclose, d.cosine, d.note))
    rows += [OutputMetrics(p, None, None, None, None, False, None, "missing from the edited outputs")
             for p in ref_leaves]
    return rows


def _samples(ref: Any, new: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    ref_leaves = dict(flatten_outputs(ref))
    out = {}
    for path, value in flatten_outputs(new):
        r = ref_leaves.get(path)
        if isinstance(r, torch.Tensor) and isinstance(value, torch.Tensor) and r.shape == value.shape:
            if r.dtype != torch.bool and not r.is_complex():
                out[path] = sample_pair(r, value.to(r.device))
    return out


def _cancelled(cancel: Any) -> Callable[[], bool] | None:
    if cancel is None:
        return None
    if hasattr(cancel, "is_set"):
        return cancel.is_set
    return cancel


def _run_once(module: torch.nn.Module, inputs: tuple[Any, ...], seed: int | None, device: str) -> Any:
    if seed is not None:
        reseed(seed, device)
    # A GraphModule's __call__ prints a traceback to stderr when its code raises (and imports
    # torch._dynamo to do it); the failure is reported with its node instead.
    call = fx_compat.ensure_code(module).forward if isinstance(module, torch.fx.GraphModule) else module
    with torch.no_grad():
        return call(*inputs)


def compare_models(original: torch.nn.Module, traced: torch.fx.GraphModule, edited: torch.fx.GraphModule,
                   inputs: tuple[Any, ...], *, device: str = "cpu", dtype: str | torch.dtype | None = None,
                   rtol: float = 1e-5, atol: float = 1e-6, repeats: int | None = None, per_node: bool = True,
                   progress: Callable[[float, str], None] | None = None, cancel: Any = None,
                   match: str = "id", seed: int | None = 0, eval_mode: bool = True,
                   share_unchanged: bool = True, threads: int | None = None) -> CompareReport:
    """Compare ``edited`` with ``original`` (the module as loaded) and ``traced`` on ``inputs``.

    ``device`` is one of ``available_devices()``; ``dtype`` (``"float32"``, ``"float16"``,
    ``"bfloat16"`` or None for as loaded) is applied to the modules and the floating inputs.
    Nodes are matched by ``meta["fxs_id"]`` (``match="id"``), by name (``match="name"``) or by
    what they compute (``match="structure"``, for an exported file reopened: ``node_pairing``;
    the keys are written into both graphs' ``node.meta``). ``progress(fraction, text)`` is called as the run goes; ``cancel`` (a callable
    or a ``threading.Event``) stops it with ``RunCancelled``. An exception in the edited graph is
    returned in ``report.error`` naming the node; the caller decides whether that is a failure.
    ``seed`` reseeds torch before each run so random ops draw the same numbers; with
    ``eval_mode`` a module left in training mode is run as an eval-mode copy (noted). With
    ``share_unchanged`` the node-by-node run computes nodes upstream of every edit once (they are
    equal by construction, reported ``equal`` with ``shared``); without it every node runs twice.
    The three modules are never changed (a document's share their weights): where a run could
    write into a module's state, each phase runs a copy that owns it, starting from the same state.
    Each model is timed over ``repeats`` runs after the one whose output is compared; None: up
    to ``AUTO_REPEATS`` within ``AUTO_BUDGET_S`` of timed runs per model (at least one).
    torch runs on ``threads`` intra-op threads, by default as ``fxstudio.core.threads.choose``
    sizes them to the graph's largest tensor and the free cores (the report's notes say which).
    """
    refuse_meta_weights(original, traced, edited, inputs=tuple(inputs))  # --device meta without --weights
    if threads is not None:
        choice = ThreadChoice(threads, "as set")
    elif device == "cpu" or str(device).startswith("cpu"):
        choice = choose_for(traced, tuple(inputs))
    else:
        choice = ThreadChoice(1, "the work runs on the device")  # the CPU only queues kernels
    with torch_threads(choice.count):
        report = _compare(original, traced, edited, inputs, device=device, dtype=dtype, rtol=rtol, atol=atol,
                          repeats=repeats, per_node=per_node, progress=progress, cancel=cancel, match=match,
                          seed=seed, eval_mode=eval_mode, share_unchanged=share_unchanged)
    report.notes.insert(0, f"ran on {choice.text()}")
    return report


def _compare(original: torch.nn.Module, traced: torch.fx.GraphModule, edited: torch.fx.GraphModule,
             inputs: tuple[Any, ...], *, device: str, dtype: str | torch.dtype | None, rtol: float, atol: float,
             repeats: int | None, per_node: bool, progress: Callable[[float, str], None] | None, cancel: Any,
             match: str, seed: int | None, eval_mode: bool, share_unchanged: bool) -> CompareReport:
    """``compare_models`` on the thread count it chose."""
    device = check_device(device)
    run_dtype = parse_run_dtype(dtype)
    is_cancelled = _cancelled(cancel)
    report = CompareReport(device=device, dtype=dtype_name(run_dtype) if run_dtype else None, rtol=rtol, atol=atol,
                           per_node=per_node)
    step = _Progress(progress, per_node)
    if match == "id" and not any("fxs_id" in n.meta for n in traced.graph.nodes):
        match = "name"  # graphs not made by a Document: names are all there is to match by
        report.notes.append("the graphs carry no stable node ids: nodes were matched by name")
    if match == "structure":
        pairing = pair_graphs(traced, edited)
        pairing.stamp()
        report.notes.append(pairing.describe())

    step.stage(f"copying the models to {device}")
    try:
        memo: dict[int, Any] = {}  # one memo for the three moves: weights they share are moved once
        runners = {}
        written = written_paths(traced)
        for label, module in (("original", original), ("traced", traced), ("edited", edited)):
            moved = module_for_run(module, device, run_dtype, memo=memo)
            paths = written | written_paths(moved) if label == "edited" else written
            runners[label] = _Runner(moved, eval_mode=eval_mode, written=paths)
            if label == "original" and runners[label].evaluated:
                report.notes.append("the model was in training mode; it was run in eval mode "
                                    "(dropout off, batch norm using its running statistics)")
        mods = {label: runner.get() for label, runner in runners.items()}
        args = inputs_for_run(tuple(inputs), device, run_dtype)
    except torch.OutOfMemoryError as exc:
        raise RunError(f"Out of memory moving the model to {device}: {exc}") from None

    if per_node:
        step.stage(f"matching and compiling the node-by-node run of {len(edited.graph.nodes):,} nodes")
        div = run_divergence(mods["traced"], mods["edited"], args, rtol=rtol, atol=atol, match=match,
                             progress=step.nodes, cancel=is_cancelled, seed=seed, share=share_unchanged)
        _take_divergence(report, div)
        # The output runs start from the state the node-by-node run started from.
        mods["traced"], mods["edited"] = runners["traced"].get(), runners["edited"].get()

    # A graph that writes into its inputs gets fresh copies for every call, the caller's untouched.
    fresh = graph_may_mutate(traced) or graph_may_mutate(edited)
    feed = (lambda: clone_tensors(args)) if fresh else (lambda: args)
    outs: dict[str, Any] = {}
    for i, label in enumerate(("original", "traced", "edited")):
        if is_cancelled is not None and is_cancelled():
            raise RunCancelled("The run was cancelled.")
        step.runs(i, label)
        if label == "edited" and report.error is not None and report.error.graph == "edited":
            continue
        try:
            outs[label] = _run_once(mods[label], feed(), seed, device)
        except Exception as exc:  # noqa: BLE001 - reported with the node that raised
            if label == "original":
                raise RunError(f"The original model fails on these inputs ({type(exc).__name__}: {exc}); "
                               "check the input shapes and dtype.") from None
            report.error = _locate_failure(runners["traced"].get(), runners[label].get(), args, exc, label, match, seed)
            continue
        # The run above was the warm-up: its output is what the report compares.
        report.timings_ms[label] = median_time_ms(lambda m=mods[label]: _run_once(m, feed(), seed, device),
                                                  device=device, repeats=repeats or AUTO_REPEATS, warmup=0,
                                                  cancel=is_cancelled, budget_s=None if repeats else AUTO_BUDGET_S)
    if is_cancelled is not None and is_cancelled():
        raise RunCancelled("The run was cancelled.")
    if "original" in outs and "traced" in outs:
        report.trace_outputs = _output_metrics(outs["original"], outs["traced"], rtol=rtol, atol=atol)
    if "original" in outs and "edited" in outs:
        report.outputs = _output_metrics(outs["original"], outs["edited"], rtol=rtol, atol=atol)
        report.samples = _samples(outs["original"], outs["edited"])
    step.done()
    return report


def _mode_matters(module: torch.nn.Module) -> bool:
    """True when a submodule in training mode would behave differently in eval mode."""
    kinds = (fx_compat.DROPOUT_CLASSES, fx_compat.NORM_CLASSES)
    return any(m.training and isinstance(m, kinds) for m in module.modules())


class _Runner:
    """One of the three modules of a comparison, as each phase of the run gets it.

    The document's modules share their weights with the model as loaded, so a run must not write
    into them: when running may change a module's state (its mode is switched to eval, a batch
    norm in training mode updates its statistics, the graph writes into a weight in place, or
    user code owns buffers) each phase gets a fresh ``module_state.run_copy`` (own module objects
    and buffers, written weights cloned, other weights shared); otherwise the module runs as it is.
    """

    def __init__(self, module: torch.nn.Module, *, eval_mode: bool, written: set[str]):
        self.module = module
        self.evaluated = eval_mode and _mode_matters(module)
        self.clone = tensors_at(module, written)
        self.copied = self.evaluated or bool(self.clone) or writes_buffers(module)

    def get(self) -> torch.nn.Module:
        """The module to run in the next phase."""
        if not self.copied:
            return self.module
        try:
            module = run_copy(self.module, clone=self.clone)
        except CannotCopy:  # a TorchScript module: a plain deep copy
            module = copy.deepcopy(self.module)
        if self.evaluated:
            module.eval()
        return module


def _take_divergence(report: CompareReport, div: DivergenceResult) -> None:
    report.nodes = div.nodes
    report.removed = div.removed
    report.first_divergence = div.first
    report.error = div.failure if div.failure is not None and div.failure.graph == "edited" else None
    if div.failure is not None and div.failure.graph == "original":
        raise RunError("The original graph fails on these inputs: " + div.failure.describe())
    report.divergence_by_id = {n.node_id: (n.score if n.score is not None else math.inf)
                               for n in div.nodes if n.node_id is not None and n.status in ("equal", "close", "diverged")}


def _locate_failure(traced: torch.fx.GraphModule, failing: torch.nn.Module, args: tuple[Any, ...],
                    exc: BaseException, label: str, match: str, seed: int | None) -> NodeFailure:
    """The node that raised ``exc``: found by rerunning the graph node by node (only on failure)."""
    if isinstance(failing, torch.fx.GraphModule):
        try:
            div = run_divergence(traced, failing, clone_tensors(args), rtol=0.0, atol=math.inf, match=match,
                                 seed=seed)
            if div.failure is not None:
                return div.failure
        except Exception:  # noqa: BLE001 - fall back to the plain message below
            pass
    return NodeFailure(label, "?", None, "", "", f"{type(exc).__name__}: {exc}", _is_oom(exc))


class _Progress:
    """Maps the phases (node-by-node run, then three timed runs) onto one 0..1 progress bar."""

    def __init__(self, fn: Callable[[float, str], None] | None, per_node: bool):
        self.fn = fn
        self.split = 0.6 if per_node else 0.0

    def stage(self, text: str) -> None:
        """A step of the preparation (no fraction yet: the bar stays busy, the text says what runs)."""
        if self.fn is not None:
            self.fn(0.0, text)

    def nodes(self, fraction: float, name: str) -> None:
        if self.fn is not None:
            self.fn(self.split * fraction, f"comparing node {name}")

    def runs(self, i: int, label: str) -> None:
        if self.fn is not None:
            self.fn(self.split + (1 - self.split) * i / 3, f"timing the {label} run")

    def done(self) -> None:
        if self.fn is not None:
            self.fn(1.0, "done")

