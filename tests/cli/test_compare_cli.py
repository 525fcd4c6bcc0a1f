"""`fxstudio compare MODEL EDITED` as a user runs it: edit scripts, exported-style .py files, JSON."""

import json

import pytest
import torch

from fxstudio.cli import main


def write_edits(path, *edits):
    path.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": list(edits)}))
    return path


@pytest.fixture
def add_mul_tripled(tmp_path, examples_dir):
    """add_mul.py with ``* 2`` changed to ``* 3``: node names match the original's."""
    src = (examples_dir / "add_mul.py").read_text()
    assert "return y * 2" in src
    path = tmp_path / "add_mul_tripled.py"
    path.write_text(src.replace("return y * 2", "return y * 3"))
    return path


def test_json_report_of_an_edit_script(tmp_path, examples_dir, capsys):
    script = write_edits(tmp_path / "edits.json", {"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    assert main(["compare", str(examples_dir / "add_mul.py"), str(script), "--json", "--repeats", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["first_divergence"]["name"] == "mul" and data["first_divergence"]["status"] == "diverged"
    (out,) = data["outputs"]
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert out["path"] == "out" and out["shape"] == [2, 3] and out["allclose"] is False
    assert out["max_abs"] == pytest.approx(float(((x + 5) * 8).abs().max()))
    assert out["max_rel"] == pytest.approx(4.0)
    assert data["trace_outputs"][0]["max_abs"] == 0.0
    assert set(data["timings_ms"]) == {"original", "traced", "edited"}
    assert [n["status"] for n in data["nodes"]] == ["equal", "equal", "diverged", "diverged"]
    assert [n["shared"] for n in data["nodes"]] == [True, True, False, False]
    assert data["error"] is None and data["all_close"] is False
    assert "nodes matched by stable id" in data["notes"][0]


def test_exported_style_py_matches_by_structure_and_text_report(add_mul_tripled, examples_dir, capsys):
    assert main(["compare", str(examples_dir / "add_mul.py"), str(add_mul_tripled), "--repeats", "1",
                 "--compare-all"]) == 0
    out = capsys.readouterr().out
    # the edited constant pairs ``mul`` with ``mul`` (same op, target and input; other constant)
    assert "first divergence: node mul" in out and "nodes matched by structure" in out
    assert "tracing changed nothing" in out


def test_check_flag_and_tolerances(add_mul_tripled, examples_dir, capsys):
    model = str(examples_dir / "add_mul.py")
    assert main(["compare", model, str(add_mul_tripled), "--check", "--repeats", "1"]) == 1
    assert "not within tolerance" in capsys.readouterr().err
    assert main(["compare", model, str(add_mul_tripled), "--check", "--atol", "100", "--repeats", "1"]) == 0


def test_shape_breaking_script_exits_1_naming_the_node(tmp_path, examples_dir, capsys):
    script = write_edits(tmp_path / "edits.json",
                         {"op": "insert", "after": "add", "kind": "call_method", "target": "reshape",
                          "args": "(%add, 4, -1)", "name": "bad_view"},
                         {"op": "set_arg", "node": "mul", "key": 0, "value": "%bad_view"})
    for extra in ([], ["--no-per-node"]):  # without the node-by-node run the node is found on failure
        assert main(["compare", str(examples_dir / "add_mul.py"), str(script), "--repeats", "1", *extra]) == 1
        err = capsys.readouterr().err
        assert err.startswith("fxstudio: The edited graph raised an error at node bad_view"), err
        assert "Traceback" not in err


def test_seeded_random_inputs_and_dtype(add_mul_tripled, examples_dir, capsys):
    model = str(examples_dir / "add_mul.py")
    assert main(["compare", model, str(add_mul_tripled), "--seed", "7", "--dtype", "bfloat16", "--json",
                 "--repeats", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dtype"] == "bfloat16" and data["outputs"][0]["dtype"] == "bfloat16"
    assert "random inputs, seed 7: 2,3:float32" in data["notes"][0]
    assert main(["compare", model, str(add_mul_tripled), "--input-shape", "4,5", "--seed", "1", "--json",
                 "--no-per-node", "--repeats", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["outputs"][0]["shape"] == [4, 5] and data["nodes"] is None


def test_inputs_file(tmp_path, add_mul_tripled, examples_dir, capsys):
    inputs = tmp_path / "x.pt"
    torch.save((torch.full((3, 3), -5.0),), inputs)  # (x + 5) is zero: *2 and *3 agree
    assert main(["compare", str(examples_dir / "add_mul.py"), str(add_mul_tripled), "--inputs", str(inputs),
                 "--check", "--repeats", "1"]) == 0
    assert "no node diverges" in capsys.readouterr().out


def test_bad_usage_exits_2_or_1_without_traceback(tmp_path, examples_dir, capsys):
    model = str(examples_dir / "add_mul.py")
    assert main(["compare", model, str(tmp_path / "missing.json")]) == 2
    other = tmp_path / "edits.txt"
    other.write_text("x")
    assert main(["compare", model, str(other)]) == 2
    script = write_edits(tmp_path / "e.json", {"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    assert main(["compare", model, str(script), "--device", "cuda:7"]) == (1 if not torch.cuda.is_available() or
                                                                          torch.cuda.device_count() <= 7 else 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "not available" in err
    assert main(["compare", model, str(script), "--input-spec", "2,,3"]) == 2
    assert main(["compare", model, str(script), "--inputs", str(tmp_path / "none.pt")]) == 2
    err = capsys.readouterr().err
    assert "Cannot read the input shape '2,,3'" in err and "none.pt does not exist" in err


def test_an_exported_file_compares_by_name(tmp_path, examples_dir, capsys):
    from fxstudio.core.document import Document
    from fxstudio.core.export import export_python
    from fxstudio.core.loading import load_model

    doc = Document(load_model(examples_dir / "clamp.py"))
    doc.apply_edit({"op": "set_arg", "node": "clamp", "key": "max", "value": "10.0"})
    out = tmp_path / "clamp_edited.py"
    export_python(doc, out, verify=False)
    assert main(["compare", str(examples_dir / "clamp.py"), str(out), "--json", "--repeats", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["first_divergence"]["name"] == "clamp" and data["first_divergence"]["counterpart"] == "clamp"
    assert data["outputs"][0]["max_abs"] == pytest.approx(5.0, rel=1e-6)  # inputs reach 12: 10 vs 5
