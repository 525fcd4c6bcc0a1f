"""`fxstudio layout MODEL` as a user runs it: the summary, the JSON file, collapsing, bad input."""

import json
import subprocess
import sys

from fxstudio.cli import main


def test_summary_from_the_command_line(examples_dir):
    proc = subprocess.run([sys.executable, "-m", "fxstudio", "layout", str(examples_dir / "residual_cnn.py")],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()[:2]
    assert first.startswith("residual_cnn.py (fx): 52 nodes, 52 cards, 57 edges, ")
    assert " groups (0 collapsed), 50 layers" in first
    assert second.startswith("layout: ") and " ms, 0 edge crossings, " in second


def test_json_file_has_every_node_edge_and_group(tmp_path, examples_dir, capsys):
    out = tmp_path / "layout.json"
    assert main(["layout", str(examples_dir / "residual_cnn.py"), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert len(data["nodes"]) == 52 and len(data["edges"]) == 57
    assert data["crossings"] == 0 and data["seconds"] > 0
    conv = data["nodes"]["conv1"]
    assert set(conv) == {"x", "y", "w", "h", "layer"} and conv["layer"] == 1
    edge = next(e for e in data["edges"] if e["src"] == "x" and e["dst"] == "conv1")
    assert edge["key"] == 0 and edge["points"][0][1] == data["nodes"]["x"]["y"] + data["nodes"]["x"]["h"]
    assert edge["points"][-1][1] == conv["y"]
    assert data["groups"]["layer1.0"]["label"] == "layer1.0 · BasicBlock"
    assert data["repeated"] == [["layer1.0", "layer1.1", "layer1.2"], ["layer2.1", "layer2.2"]]
    assert f"wrote {out}" in capsys.readouterr().out


def test_collapsed_modules_in_the_json(tmp_path, examples_dir):
    out = tmp_path / "collapsed.json"
    model = str(examples_dir / "transformer_block.py")
    assert main(["layout", model, "--tracer", "export", "--collapse", "*", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    collapsed = {p for p, g in data["groups"].items() if g["collapsed"]}
    assert {"blocks", "embed", "head"} <= collapsed
    assert all("." not in p for p in collapsed)
    assert any(e["dst"] == "blocks" for e in data["edges"]) and any(e["src"] == "blocks" for e in data["edges"])
    assert len(data["nodes"]) < 12


def test_unknown_module_path_is_a_clear_error(examples_dir, capsys):
    code = main(["layout", str(examples_dir / "residual_cnn.py"), "--collapse", "layer9"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--collapse layer9: the graph has no module 'layer9'" in err and "layer1" in err
    assert "Traceback" not in err


def test_unwritable_json_path_is_a_clear_error(tmp_path, examples_dir, capsys):
    target = tmp_path / "missing-dir" / "out.json"
    code = main(["layout", str(examples_dir / "two_linear.py"), "--json", str(target)])
    assert code == 2 and "cannot write" in capsys.readouterr().err
