"""``--weights CKPT``: a safetensors checkpoint (one file, or a folder of shards) mapped into a model
built on the meta device.

safetensors maps the file (``mmap``, private): a tensor's pages are read when something first
touches them, and nothing is copied. Before any weight is set, the checkpoint's names, shapes and
dtypes are checked against the model; a mismatch is one line naming the first offending entry and
how many there are. The checkpoint is data: its names are only compared with the model's own.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from fxstudio.core.errors import LoadError
from fxstudio.core.fx_compat_modules import own_buffers, own_parameters

MAX_SHARDS = 10_000
"""More ``.safetensors`` files than this in a folder is not a checkpoint."""


def checkpoint_files(path: Path) -> list[Path]:
    """The ``.safetensors`` files of ``path`` (a file, or a folder of shards, sorted by name)."""
    if not path.exists():
        raise LoadError(f"--weights {path}: no such file or folder.")
    if path.is_dir():
        files = sorted(p for p in path.glob("*.safetensors") if p.is_file())
        if not files:
            raise LoadError(f"--weights {path}: the folder holds no .safetensors file.")
        if len(files) > MAX_SHARDS:
            raise LoadError(f"--weights {path}: {len(files):,} .safetensors files; a checkpoint has at most {MAX_SHARDS:,}.")
        return files
    if path.suffix.lower() != ".safetensors":
        raise LoadError(f"--weights {path}: not a .safetensors file (give a .safetensors checkpoint or a folder of shards).")
    return [path]


def map_checkpoint(path: Path) -> dict[str, torch.Tensor]:
    """Every tensor of the checkpoint at ``path``, mapped (not read); ``LoadError`` on a broken file
    or a name found in two shards."""
    from safetensors import safe_open

    tensors: dict[str, torch.Tensor] = {}
    for file in checkpoint_files(path):
        try:
            with safe_open(str(file), framework="pt", device="cpu") as reader:
                for name in reader.keys():
                    if name in tensors:
                        raise LoadError(f"--weights {path}: '{name}' is in two shards (the second: {file.name}).")
                    tensors[name] = reader.get_tensor(name)
        except LoadError:
            raise
        except Exception as exc:  # noqa: BLE001 - SafetensorError, OSError, a dtype torch lacks...
            text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise LoadError(f"--weights {file}: not a readable safetensors file ({text}).") from None
    return tensors


def _aliases(module: nn.Module) -> dict[str, list[str]]:
    """Each tensor's names in ``state_dict`` order, grouped: a tied weight has several."""
    groups: dict[int, list[str]] = {}
    state = module.state_dict(keep_vars=True)
    for name, t in state.items():
        if isinstance(t, torch.Tensor):
            groups.setdefault(id(t), []).append(name)
    return {names[0]: names for names in groups.values()}


def _shape(t) -> str:
    return "(" + ", ".join(str(d) for d in t.shape) + ")"


def check_names(module: nn.Module, tensors: dict[str, torch.Tensor], path: Path) -> dict[str, torch.Tensor]:
    """The checkpoint's tensor for every ``state_dict`` name of ``module`` (tied names share one);
    ``LoadError`` naming the first unknown, missing or wrongly shaped entry."""
    state = module.state_dict(keep_vars=True)
    unknown = sorted(n for n in tensors if n not in state)
    if unknown:
        raise LoadError(f"--weights {path}: '{unknown[0]}' is not a parameter or buffer of the model"
                        f"{f' (and {len(unknown) - 1} more)' if len(unknown) > 1 else ''}; "
                        "the checkpoint belongs to another model or uses other names.")
    buffers = {n for n, _ in module.named_buffers(remove_duplicate=False)}
    found: dict[str, torch.Tensor] = {}
    missing = []
    for names in _aliases(module).values():
        given = [n for n in names if n in tensors]
        if given:
            found.update({n: tensors[given[0]] for n in names})
        elif not all(n in buffers for n in names):  # a missing persistent buffer keeps its built value
            missing.append(names[0])
    for name, t in found.items():
        want = state[name]
        if tuple(t.shape) != tuple(want.shape):
            raise LoadError(f"--weights {path}: '{name}' has shape {_shape(t)} in the checkpoint, {_shape(want)} in the model.")
        if t.dtype.is_floating_point != want.dtype.is_floating_point:
            raise LoadError(f"--weights {path}: '{name}' is {t.dtype} in the checkpoint, {want.dtype} in the model.")
    if missing:
        raise LoadError(f"--weights {path}: the checkpoint has no '{missing[0]}'"
                        f"{f' (and {len(missing) - 1} more weights)' if len(missing) > 1 else ''}.")
    return found


def load_weights(module: nn.Module, path: Path, buffers: dict[str, torch.Tensor]) -> str:
    """Set the weights of ``module`` (built on meta) from the checkpoint at ``path``, mapped not copied
    (a floating dtype other than the model's is converted, which copies); ``buffers``: the real
    values of its buffers from the build, for those the checkpoint lacks. Returns a note."""
    path = Path(path).expanduser()
    found = check_names(module, map_checkpoint(path), path)
    converted = 0
    for name, value in found.items():
        owner_path, _, attr = name.rpartition(".")
        owner = module.get_submodule(owner_path)
        current = own_parameters(owner).get(attr) if attr in own_parameters(owner) else own_buffers(owner).get(attr)
        if current is not None and value.dtype != current.dtype:
            value = value.to(current.dtype)
            converted += 1
        if attr in own_parameters(owner):
            own_parameters(owner)[attr] = nn.Parameter(value, requires_grad=current.requires_grad)
        else:
            own_buffers(owner)[attr] = value
    for name, value in buffers.items():  # non-persistent buffers and persistent ones the file lacks
        owner_path, _, attr = name.rpartition(".")
        owner = module.get_submodule(owner_path)
        if name not in found and attr in own_buffers(owner):
            own_buffers(owner)[attr] = value
    from fxstudio.core.loading.meta_device import meta_tensor_names

    left = meta_tensor_names(module)
    if left:
        raise LoadError(f"--weights {path}: '{left[0]}' still has no value after loading the checkpoint.")
    gib = sum(t.numel() * t.element_size() for t in {id(v): v for v in found.values()}.values()) / 2**30
    note = f"weights mapped from {path.name} ({gib:.2f} GiB, read from disk as they are used)"
    return note + (f"; {converted} converted to the model's dtype" if converted else "")
