"""An editable ``.pt2`` module without torch's deserializer or ``ep.module()`` (issue #28).

On a 10k-node program torch spends seconds rebuilding the ``ExportedProgram`` (a fake tensor per
node) and unlifting it; editing, running, comparing and exporting need neither. From the
archive's checked JSON (``pt2_archive``) this builds the graph ``ep.module()`` gives (same node
names, targets, arguments and order: ``pt2_structure``'s reader with real argument values), over
a module holding the archive's weights read as data (``pt2_weights``: the same records, checked
against the graph's recorded shapes and dtypes), with ``ep.module()``'s pytree calling
convention and its ``_guards_fn`` call. Anything it does not read (higher-order operators,
symbolic sizes, mutated buffers, custom objects, other devices) gives ``None``, and the caller
runs torch's full load instead. No feature reads the ``ExportedProgram`` itself: the document's
``exported_program`` is None, as for a ``.py`` model.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch

from fxstudio.core import fx_compat, fx_compat_export
from fxstudio.core.budgets import BudgetExceeded, DataBudget
from fxstudio.core.loading import pt2_structure
from fxstudio.core.loading.pt2_values import Unsupported

_EXPECTED = (Unsupported, BudgetExceeded, KeyError, TypeError, ValueError, AttributeError, IndexError, RuntimeError)


class GuardsFn(torch.nn.Module):
    """The ``_guards_fn`` ``ep.module()`` calls on its inputs (impure: dead-code elimination keeps
    it): here, that each tensor input has the static shape the program was exported with (the
    reader opens only programs without symbolic sizes), with torch's message and error type."""

    _is_impure = True

    def __init__(self, shapes: list[tuple[str, tuple[int, ...] | None]]):
        super().__init__()
        self.shapes = shapes

    def forward(self, *args):
        """``AssertionError`` ("Guard failed: x.size()[0] == 4") for the first size that differs."""
        for (name, want), value in zip(self.shapes, args):
            if want is None or not isinstance(value, torch.Tensor):
                continue
            if value.dim() != len(want):
                raise AssertionError(f"Guard failed: {name}.dim() == {len(want)}")
            for i, (got, size) in enumerate(zip(value.shape, want)):
                if got != size:
                    raise AssertionError(f"Guard failed: {name}.size()[{i}] == {size}")


def editable_module(program: dict, sample: Any, payloads: tuple[dict, dict]) -> torch.fx.GraphModule | None:
    """The module ``ep.module()`` would give for the checked ``program`` with ``payloads``
    (``(weights, constants)``) and stored example inputs ``sample``; None where this reader stops."""
    try:
        module_json = program["graph_module"]
        if any(next(iter(spec)) != "user_output" for spec in module_json["signature"]["output_specs"]):
            return None  # mutated buffers or inputs: ep.module() inserts copies
        graph_json = module_json["graph"]
        if any(graph_json.get(k) for k in ("sym_int_values", "sym_float_values", "sym_bool_values")) or any(
                "as_int" not in size for info in graph_json["tensor_values"].values() for size in info["sizes"]):
            return None  # symbolic sizes: torch's program knows their ranges and guards
        entry = next(e for e in module_json["module_call_graph"] if e.get("fqn") == "")
        signature = entry["signature"]
        gm, _ = pt2_structure._graph_module(program, DataBudget("editable"), payloads, class_name="GraphModule")
        codegen = fx_compat_export.pytree_codegen(signature["in_spec"], signature.get("out_spec"),
                                                  signature.get("forward_arg_names"))
    except _EXPECTED + (StopIteration, ImportError):
        return None
    fx_compat.set_graph_codegen(gm.graph, codegen)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if placeholders and sample:  # as ep.module() (check_guards), after the last placeholder
        shapes = [(n.name, tuple(n.meta["val"].shape) if isinstance(n.meta.get("val"), torch.Tensor) else None)
                  for n in placeholders]
        gm.add_module("_guards_fn", GuardsFn(shapes))
        stack = next((n.meta["nn_module_stack"] for n in gm.graph.nodes
                      if n.op == "call_function" and "nn_module_stack" in n.meta), None)
        with gm.graph.inserting_after(placeholders[-1]):
            node = gm.graph.call_module("_guards_fn", tuple(placeholders))
        node.meta["nn_module_stack"] = stack  # the first call's, as torch.fx._utils gives it
    gm.graph.lint()
    gm.recompile()
    return gm


class ProgramFacts:
    """What ``pt2_loader.program_example_inputs`` reads of an ``ExportedProgram``, taken from the
    editable module and the archive: user input specs, placeholders, stored inputs, ``in_spec``."""

    def __init__(self, program: dict, gm: torch.fx.GraphModule, sample: Any):
        from torch.export.graph_signature import ConstantArgument, InputKind, InputSpec, TensorArgument

        specs = []
        for spec in program["graph_module"]["signature"]["input_specs"]:
            (kind, body), = spec.items()
            if kind == "user_input":
                specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(body["arg"]["as_tensor"]["name"]), None))
            elif kind == "constant_input":
                value = pt2_structure._literal(body.get("value") or {"as_none": True})
                specs.append(InputSpec(InputKind.USER_INPUT, ConstantArgument(body["name"], value), None))
        self.graph_signature = SimpleNamespace(input_specs=specs)
        # the program's placeholders by their names in the program (a module's may be renamed: input_1)
        self.graph = SimpleNamespace(nodes=[SimpleNamespace(op="placeholder", name=n.target, meta=n.meta)
                                            for n in gm.graph.nodes if n.op == "placeholder"])
        self.example_inputs = sample
        self.call_spec = SimpleNamespace(in_spec=fx_compat.graph_codegen(gm.graph).pytree_info.in_spec)
