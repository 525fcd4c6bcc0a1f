"""Export of a generated deep model (~2.5k nodes) as a standalone .py, against references run alongside.

``python -m bench.bench_export`` (``--quick``: ~250 nodes). Reports, with the same model in the
same run: writing the file (``export_python(verify=False)``) against ``GraphModule.to_folder``
(torch.fx's own writer), and the full verified export against a bare ``python -I -c "import torch"``
(the floor of any check in a fresh process).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import best_time, deep_model_source


def main(argv: list[str]) -> int:
    """Write the model, time each step, print ratios and a markdown table."""
    from fxstudio.core.export import export_python
    from fxstudio.core.loading import load_model

    quick = "--quick" in argv
    blocks = 50 if quick else 500
    repeats = 1 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = tmp / "deep_export_bench.py"
        path.write_text(deep_model_source(width=32, blocks=blocks, batch=8))
        loaded = load_model(path)
        gm = loaded.graph_module
        nodes = len(gm.graph.nodes)
        n = iter(range(1000))

        t_to_folder = best_time(lambda: gm.to_folder(tmp / f"folder{next(n)}", "Deep"), repeats)
        t_write = best_time(lambda: export_python(loaded, tmp / f"out{next(n)}.py", verify=False), repeats)
        t_python = best_time(lambda: subprocess.run([sys.executable, "-I", "-c", "import torch"], check=True), repeats)
        result = export_python(loaded, tmp / "verified.py")
        t_verified = result.seconds
        lines = result.py_path.read_text().count("\n")

    print(f"model: {blocks} blocks, {nodes} nodes; exported file {lines} lines; {result.verdict}")
    print(f"write (no check) / GraphModule.to_folder: {t_write / t_to_folder:.2f}x")
    print(f"verified export / bare `python -c 'import torch'`: {t_verified / t_python:.2f}x")
    print()
    print("| step | seconds | reference | ratio |")
    print("| --- | ---: | --- | ---: |")
    print(f"| export_python(verify=False) | {t_write:.3f} | to_folder {t_to_folder:.3f} s | {t_write / t_to_folder:.2f}x |")
    print(f"| export_python (verified) | {t_verified:.3f} | python+torch start {t_python:.3f} s | {t_verified / t_python:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
