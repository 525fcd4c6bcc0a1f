"""``fxstudio.core.fx_compat_export``: the faster ``.pt2`` internals give torch's own answers, and
each falls back to torch's path when its private is taken away (issue #15)."""

from __future__ import annotations

import json
import zipfile

import torch
from torch import nn

from fxstudio.core import fx_compat_export


class Deep(nn.Module):
    """A Sequential of residual blocks (the quadratic case of ``_assign_attr``) plus a buffer."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(12)])
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return self.bn(x)


def _archive(tmp_path):
    path = tmp_path / "deep.pt2"
    torch.manual_seed(0)
    torch.export.save(torch.export.export(Deep().eval(), (torch.randn(3, 4),)), path)
    return path


def _program_json(path):
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith("models/model.json"))
        return json.loads(zf.read(name))


def test_program_schema_is_torchs_dataclasses_and_falls_back(tmp_path, monkeypatch):
    import torch._export.serde.serialize as serialize
    from torch._export.serde import schema

    program = _program_json(_archive(tmp_path))
    ours = fx_compat_export.program_schema(program)
    torchs = serialize._dict_to_dataclass(schema.ExportedProgram, _program_json(tmp_path / "deep.pt2"))
    assert ours == torchs and repr(ours) == repr(torchs)
    import sys
    import types

    # A torch without the fast walk's helper (serialize keeps the one it imported): torch's own walk.
    monkeypatch.setitem(sys.modules, "torch._export.serde.union", types.ModuleType("torch._export.serde.union"))
    assert fx_compat_export.program_schema(program) == torchs


def test_unlift_is_ep_module(tmp_path):
    import torch.export._unlift as unlift_module

    ep = torch.export.load(_archive(tmp_path))
    x = torch.randn(3, 4)

    def same(a, b):
        assert [n for n, _ in a.named_modules()] == [n for n, _ in b.named_modules()]
        assert {k: v.data_ptr() for k, v in a.state_dict(keep_vars=True).items()} == \
            {k: v.data_ptr() for k, v in b.state_dict(keep_vars=True).items()}
        assert a.code == b.code
        torch.testing.assert_close(a(x), b(x))

    reference = ep.module()
    same(fx_compat_export.unlift(ep), reference)
    assert unlift_module._assign_attr.__module__ == "torch.export.unflatten"  # put back after the call
    # A weight path with a call name ("blocks@1", as unflatten names a module called twice) takes
    # torch's own scan, which matches those names.
    assert not fx_compat_export._has_call_names(ep)
