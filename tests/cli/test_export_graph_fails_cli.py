"""``fxstudio apply … -o OUT`` and ``fxstudio export`` when the graph itself raises on its example
inputs (issue #26, defect 3): one line on stderr that says whether it is the *edited* graph or the
model itself, names the node and torch's message, and suggests ``--no-verify``; exit 1, nothing
written. The failure is data-dependent (a Cholesky of a matrix that is not positive-definite), so
the edit passes shape propagation and only the verification run meets it."""

from __future__ import annotations

import json

from fxstudio.cli import main
from tests.model_files import write_model

CHOLESKY_BODY = """
class Chol(nn.Module):
    def forward(self, x):
        return torch.linalg.cholesky(x * {scale}) + 1


def example_inputs():
    return (torch.eye(3),)
"""
NOT_POSITIVE_DEFINITE = "linalg.cholesky: The factorization could not be completed because the input is not positive-definite"


def test_apply_names_the_node_of_the_edited_graph_that_raises(tmp_path, capsys):
    model = write_model(tmp_path / "chol.py", CHOLESKY_BODY.format(scale="2.0"))
    script = tmp_path / "edits.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": [
        {"op": "set_arg", "node": "mul", "key": 1, "value": "-2.0"}]}))
    for out in (tmp_path / "out.py", tmp_path / "out.pt2"):
        assert main(["apply", str(model), str(script), "-o", str(out)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("fxstudio: the edited graph fails on its example inputs at node `linalg_cholesky` (")
        assert NOT_POSITIVE_DEFINITE in err and "--no-verify" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chol.py", "edits.json"]
    # What the message suggests writes the file.
    assert main(["apply", str(model), str(script), "-o", str(tmp_path / "out.py"), "--no-verify"]) == 0
    assert (tmp_path / "out.py").is_file()


def test_export_says_the_model_itself_fails_and_names_the_node(tmp_path, capsys):
    model = write_model(tmp_path / "chol_neg.py", CHOLESKY_BODY.format(scale="-2.0"))
    assert main(["export", str(model), "-o", str(tmp_path / "out.py")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fxstudio: the model itself fails on its example inputs at node `linalg_cholesky` (")
    assert NOT_POSITIVE_DEFINITE in err and "undo the edit" not in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chol_neg.py"]
