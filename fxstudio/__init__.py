"""fxstudio: a desktop editor for torch.fx graphs."""

__version__ = "0.1.0"


# The Python API (docs/from_code.md), imported on first use: ``import fxstudio`` stays cheap and
# imports neither torch nor Qt. Name -> module that defines it.
_LAZY = {
    "edit": "fxstudio.api",
    "show": "fxstudio.api",
    "apply": "fxstudio.api",
    "capture": "fxstudio.core.capture",  # torch.compile(model, backend=fxstudio.capture("run.fxcap"))
}


def __getattr__(name: str):
    """``fxstudio.edit`` and the other API names, imported from their module when first used."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fxstudio' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, with the lazily imported API names."""
    return sorted({*globals(), *_LAZY})
