"""In a fresh ``python -I``: run the exported ``.py`` and ``.pt2`` of a pass on the reference inputs.

``python -I rerun.py WORK``: imports ``WORK/exported.py`` (its ``get_model()``) and loads
``WORK/exported.pt2`` with ``torch.export.load`` (after the imports the export printed as needed for
the op namespaces it uses), runs both on ``reference.pt``'s inputs and prints one JSON line per file:
``{"file", "max_abs_error"}`` against plain torch's outputs, or ``{"file", "error"}``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import traceback
from pathlib import Path


def _max_error(a, b) -> float:
    import torch

    if isinstance(a, torch.Tensor):
        if a.shape != b.shape:
            return float("inf")
        return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0
    if isinstance(a, (tuple, list)):
        return max((_max_error(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    if isinstance(a, dict):
        return max((_max_error(a[k], b[k]) for k in a), default=0.0)
    return 0.0 if a == b else float("inf")


def main() -> int:
    """Print the two results (see the module docstring)."""
    work = Path(sys.argv[1])
    import torch

    ref = torch.load(work / "reference.pt", weights_only=False)
    for name in ("exported.py", "exported.pt2"):
        path = work / name
        if not path.exists():
            print(json.dumps({"file": name, "error": "not written"}))
            continue
        try:
            if name.endswith(".py"):
                sys.path.insert(0, str(work))
                spec = importlib.util.spec_from_file_location("exported", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                model = module.get_model()
            else:
                needs = (work / "pt2_imports.txt").read_text().split() if (work / "pt2_imports.txt").exists() else []
                for mod in needs:
                    importlib.import_module(mod)
                model = torch.export.load(path).module()
            with torch.no_grad():
                got = model(*ref["inputs"])
            print(json.dumps({"file": name, "max_abs_error": _max_error(got, ref["outputs"])}))
        except BaseException:  # noqa: BLE001
            print(json.dumps({"file": name, "error": traceback.format_exc()[-3000:]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
