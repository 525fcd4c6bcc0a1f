"""Hostile ``.pt2`` archives for the trust-boundary tests: a real ``torch.export.save`` archive,
rewritten so that one part of it carries a payload that creates the marker file if it runs; and
(issue #23, round 2) rewritten so that what it declares (shapes, weight layouts, stored inputs,
payload compression) asks for more than the file holds."""

from __future__ import annotations

import builtins
import io
import json
import zipfile
from pathlib import Path

import torch


class Tiny(torch.nn.Module):
    """A linear layer plus a buffer: one parameter path to poison, stored example inputs."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.register_buffer("scale", torch.full((2,), 2.0))

    def forward(self, x):
        return torch.relu(self.lin(x)) * self.scale


class Payload:
    """Unpickling this object runs ``source`` (through ``exec``)."""

    def __init__(self, source: str):
        self.source = source

    def __reduce__(self):
        return (builtins.exec, (self.source,))


def save_tiny(path: Path, *, dynamic: bool = False) -> Path:
    """A genuine archive of ``Tiny`` exported on a (4, 3) input."""
    torch.manual_seed(0)
    shapes = ({0: torch.export.Dim("batch", min=2, max=64)},) if dynamic else None
    ep = torch.export.export(Tiny(), (torch.randn(4, 3),), dynamic_shapes=shapes)
    torch.export.save(ep, path)
    return path


def pickled(obj) -> bytes:
    """``obj`` as ``torch.save`` writes it."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def rewrite(src: Path, dst: Path, edit) -> Path:
    """Copy the archive ``src`` to ``dst``, passing ``{record: bytes}`` (without the top folder) through ``edit``."""
    with zipfile.ZipFile(src) as zf:
        top = zf.namelist()[0].split("/", 1)[0]
        records = {n.split("/", 1)[1]: zf.read(n) for n in zf.namelist()}
    records = edit(records) or records
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zf:
        for name, data in records.items():
            zf.writestr(f"{top}/{name}", data)
    return dst


def pickled_weight(src: Path, dst: Path, source: str, fqn: str = "lin.weight") -> Path:
    """The weight ``fqn`` marked ``use_pickle`` and replaced by a payload."""

    def edit(records):
        config_name = "data/weights/model_weights_config.json"
        config = json.loads(records[config_name])
        meta = config["config"][fqn]
        meta["use_pickle"] = True
        meta["path_name"] = "weight_evil"
        records["data/weights/weight_evil"] = pickled(Payload(source))
        records[config_name] = json.dumps(config).encode()

    return rewrite(src, dst, edit)


def pickled_inputs(src: Path, dst: Path, source: str) -> Path:
    """The stored example inputs replaced by a payload (torch falls back to a full unpickle)."""

    def edit(records):
        records["data/sample_inputs/model.pt"] = pickled((Payload(source),))

    return rewrite(src, dst, edit)


def renamed(src: Path, dst: Path, old: str, new: str) -> Path:
    """Every occurrence of the parameter path ``old`` (in the program and the weights configuration) renamed to ``new``."""

    def edit(records):
        for name in ("models/model.json", "data/weights/model_weights_config.json"):
            data = json.loads(records[name])
            records[name] = json.dumps(_replace(data, old, new)).encode()

    return rewrite(src, dst, edit)


def program_edit(src: Path, dst: Path, change) -> Path:
    """The program JSON passed through ``change(program)`` (in place)."""

    def edit(records):
        program = json.loads(records["models/model.json"])
        change(program)
        records["models/model.json"] = json.dumps(program).encode()

    return rewrite(src, dst, edit)


def _replace(value, old: str, new: str):
    if isinstance(value, dict):
        return {(new if k == old else k): _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    if value == old:
        return new
    return value


# -- issue #23 round 2: sizes and expressions an archive declares ---------------------------------

TENSOR_VALUES = ("graph_module", "graph", "tensor_values")


def without_inputs(src: Path, dst: Path, change=None) -> Path:
    """The archive without stored example inputs (fxstudio then makes them from the recorded
    shapes), its program JSON passed through ``change(program)`` first when given."""

    def edit(records):
        del records["data/sample_inputs/model.pt"]
        if change is not None:
            program = json.loads(records["models/model.json"])
            change(program)
            records["models/model.json"] = json.dumps(program).encode()

    return rewrite(src, dst, edit)


def recorded_shape(program: dict, name: str, sizes: list[int], strides: list[int] | None = None) -> None:
    """Set the recorded sizes (and strides: contiguous when None, no overflow check) of tensor ``name``."""
    tensor = program["graph_module"]["graph"]["tensor_values"][name]
    tensor["sizes"] = [{"as_int": s} for s in sizes]
    if strides is None:
        strides, step = [], 1
        for s in reversed(sizes):
            strides.insert(0, step)
            step *= max(s, 1)
    tensor["strides"] = [{"as_int": s} for s in strides]


def weight_layout(src: Path, dst: Path, sizes: list[int], strides: list[int], data: bytes,
                  fqn: str = "lin.weight") -> Path:
    """The weight ``fqn`` declared with ``sizes``/``strides`` over a record holding ``data`` (an
    empty record: torch makes zeros of the declared shape; a stride of 0 repeats the stored bytes)."""

    def edit(records):
        config_name = "data/weights/model_weights_config.json"
        config = json.loads(records[config_name])
        meta = config["config"][fqn]
        meta["tensor_meta"]["sizes"] = [{"as_int": s} for s in sizes]
        meta["tensor_meta"]["strides"] = [{"as_int": s} for s in strides]
        records[f"data/weights/{meta['path_name']}"] = data
        records[config_name] = json.dumps(config).encode()

    return rewrite(src, dst, edit)


def deflated_save(obj) -> bytes:
    """``obj`` as ``torch.save`` writes it, its records then deflated (a small file that unpacks large)."""
    src = zipfile.ZipFile(io.BytesIO(pickled(obj)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in src.namelist():
            zf.writestr(name, src.read(name))
    return out.getvalue()


def legacy_save(obj) -> bytes:
    """``obj`` in ``torch.save``'s legacy (pre-zip) format."""
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=False)
    return buf.getvalue()
