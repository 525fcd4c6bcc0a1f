"""The round trip of node names when the traced graph is not the recorded one (``export.names``):
the third constant, ``FXSTUDIO_NODE_STRUCTURE``, lets a reopen pair nodes by what they compute;
files with the first two constants only still restore by signature."""

from __future__ import annotations

import operator
import types

import torch
import torch.fx
from torch import nn

from fxstudio.core.compare import pair_items
from fxstudio.core.export import restore_exported_names
from fxstudio.core.export.names import (EXACT_NOTE, NAMES_VARIABLE, SIGNATURE_VARIABLE, STRUCTURE_VARIABLE,
                                        names_block)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = torch.relu(self.fc(x))
        return y * 0.5 + y.mean(dim=-1, keepdim=True)


def edited() -> torch.fx.GraphModule:
    """``Net`` traced, with ``neutral = torch.mul(relu, 1.0)`` spliced in after ``relu``."""
    gm = torch.fx.symbolic_trace(Net())
    relu = next(n for n in gm.graph.nodes if n.name == "relu")
    with gm.graph.inserting_after(relu):
        new = gm.graph.call_function(torch.mul, (relu, 1.0))
    relu.replace_all_uses_with(new, delete_user_cb=lambda user: user is not new)
    new.name = "neutral"
    gm.recompile()
    return gm


def retraced(gm: torch.fx.GraphModule, *, target=None) -> torch.fx.GraphModule:
    """``gm``'s graph as tracing its code gives it back: nodes named after their targets (and,
    with ``target``, the inserted ``torch.mul`` called as that, as ``--tracer export`` does)."""
    again = torch.fx.symbolic_trace(torch.fx.GraphModule(gm, gm.graph))
    if target is not None:
        for n in again.graph.nodes:
            if n.target is torch.mul:
                n.target = target
        again.recompile()
    return again


def file_module(graph: torch.fx.Graph, *, keep=(NAMES_VARIABLE, SIGNATURE_VARIABLE, STRUCTURE_VARIABLE)):
    """The constants an export appends, as the module of the exported file holds them."""
    namespace: dict = {}
    exec("\n".join(names_block(graph)), namespace)  # noqa: S102 - the lines names_block writes
    return types.SimpleNamespace(**{k: namespace[k] for k in keep})


def names(gm: torch.fx.GraphModule) -> list[str]:
    return [n.name for n in gm.graph.nodes]


def test_the_traced_names_differ_before_the_restore():
    assert "neutral" not in names(retraced(edited()))


def test_same_structure_restores_by_position_with_the_old_note():
    gm = edited()
    again = retraced(gm)
    restored = restore_exported_names(again, file_module(gm.graph), pair=pair_items)
    assert restored and restored.exact and restored.note() == EXACT_NOTE
    assert names(again) == names(gm)


def test_another_target_of_the_same_stem_restores_by_structure():
    gm = edited()
    again = retraced(gm, target=operator.mul)  # the signature no longer matches
    assert "neutral" not in names(again)
    restored = restore_exported_names(again, file_module(gm.graph), pair=pair_items)
    assert restored and not restored.exact
    assert names(again) == names(gm)
    assert restored.note() == f"{EXACT_NOTE}, nodes matched by structure: {len(gm.graph.nodes)} of {len(gm.graph.nodes)}"
    assert "neutral = relu * 1.0" in again.code  # recompiled under the restored names


def test_an_unused_attribute_read_fx_drops_is_named_in_the_note():
    gm = edited()
    x = next(n for n in gm.graph.nodes if n.op == "placeholder")
    with gm.graph.inserting_after(x):
        gm.graph.call_function(getattr, (x, "ndim"))  # read, never used: timm's torch._assert message
    gm.recompile()
    again = retraced(gm)
    assert len(again.graph.nodes) == len(gm.graph.nodes) - 1  # fx traces the read lazily: gone
    restored = restore_exported_names(again, file_module(gm.graph), pair=pair_items)
    assert restored.missing == ("getattr_1",) and restored.restored == len(again.graph.nodes)
    assert names(again) == [name for name in names(gm) if name != "getattr_1"]
    assert "recorded, not in the traced graph: getattr_1" in restored.note()


def test_files_with_two_constants_restore_by_signature_only():
    gm = edited()
    old_file = file_module(gm.graph, keep=(NAMES_VARIABLE, SIGNATURE_VARIABLE))
    same = retraced(gm)
    assert restore_exported_names(same, old_file, pair=pair_items).exact
    assert names(same) == names(gm)
    other = retraced(gm, target=operator.mul)
    before = names(other)
    assert restore_exported_names(other, old_file, pair=pair_items) is None
    assert names(other) == before


def test_without_the_pairing_or_with_a_malformed_structure_nothing_changes():
    gm = edited()
    other = retraced(gm, target=operator.mul)
    before = names(other)
    assert restore_exported_names(other, file_module(gm.graph)) is None  # export alone does not pair
    broken = file_module(gm.graph)
    broken.FXSTUDIO_NODE_STRUCTURE = broken.FXSTUDIO_NODE_STRUCTURE.replace(":", ";", 1)
    assert restore_exported_names(other, broken, pair=pair_items) is None
    broken.FXSTUDIO_NODE_STRUCTURE = "p:x::0 " * len(before)
    assert restore_exported_names(other, broken, pair=pair_items).restored == 1  # the input alone
    assert names(other) == before


def test_an_unpaired_node_keeps_its_name_unless_a_restored_one_takes_it():
    gm = edited()
    recorded = gm.graph
    again = retraced(gm, target=operator.mul)
    extra = next(n for n in again.graph.nodes if n.target == "mean")
    with again.graph.inserting_after(extra):
        sin = again.graph.call_function(torch.sin, (extra,))
    extra.replace_all_uses_with(sin, delete_user_cb=lambda user: user is not sin)
    sin.name = "neutral"  # tracing named it what the file records for another node
    again.recompile()
    restored = restore_exported_names(again, file_module(recorded), pair=pair_items)
    got = names(again)
    assert got.count("neutral") == 1 and "neutral_1" in got
    assert restored.unmatched == ("neutral_1",)
    out = again(torch.ones(2, 4))
    assert out.shape == (2, 4)
