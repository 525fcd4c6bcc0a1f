"""``.pt2`` archives are data: a hostile archive never runs code without ``--trust``.

Each archive is a real ``torch.export.save`` file rewritten so that one part carries a payload
that creates the marker file if it runs: a weight marked ``use_pickle``, pickled sample inputs,
a shape expression that ``sympy.sympify`` would eval, an input guard that ``ep.module()`` would
exec, a parameter path with a quote that torch.fx would write into code. They go through the real
``fxstudio`` command (inspect, export, apply, compare, the window's screenshot); with ``--trust``
the same files do run their payload, which shows the files are really hostile.
"""

from __future__ import annotations

import json

import pytest

from tests.security import pt2_hostile as h


def _hex_exec(source: str) -> str:
    """``source`` as an expression with no dots or double quotes that runs it."""
    return f"exec(__import__('binascii').unhexlify('{source.encode().hex()}'))"


def _sympy_payload(program: dict, source: str) -> None:
    tensor = program["graph_module"]["graph"]["tensor_values"]["x"]
    expr = tensor["sizes"][0]["as_expr"]
    expr["expr_str"] = f"{_hex_exec(source)} or {expr['expr_str']}"


def _guard_payload(program: dict, source: str) -> None:
    program["guards_code"] = [f"L['x'].size()[0] >= 0 and {_hex_exec(source)} is None"]


def make(kind: str, hostile, name: str = "hostile.pt2"):
    """A hostile archive of ``kind`` whose payload creates ``hostile.marker``."""
    base = h.save_tiny(hostile.dir / "base.pt2", dynamic=kind == "sympy")
    dst = hostile.dir / name
    payload = hostile.payload
    if kind == "pickled_weight":
        return h.pickled_weight(base, dst, payload)
    if kind == "pickled_inputs":
        return h.pickled_inputs(base, dst, payload)
    if kind == "sympy":
        return h.program_edit(base, dst, lambda p: _sympy_payload(p, payload))
    if kind == "guard":
        return h.program_edit(base, dst, lambda p: _guard_payload(p, payload))
    names = {
        "quote_name": f'lin.w"+str({_hex_exec(payload)})+"',
        "paren_name": f'lin.w"),{_hex_exec(payload)},("',
        "newline_name": f"lin.w\n{_hex_exec(payload)}\n",
    }
    return h.renamed(base, dst, "lin.weight", names[kind])


PICKLES = ["pickled_weight", "pickled_inputs"]
CODE = ["sympy", "guard"]
NAMES = ["quote_name", "paren_name", "newline_name"]


def test_a_genuine_archive_opens_without_trust(hostile):
    path = h.save_tiny(hostile.dir / "tiny.pt2", dynamic=True)
    proc = hostile.run("inspect", path, "--json")
    hostile.assert_clean(proc, code=0)
    nodes = {n["name"] for n in json.loads(proc.stdout)["nodes"]}
    assert {"x", "linear", "relu", "mul"} <= nodes


@pytest.mark.parametrize("kind", PICKLES + CODE + NAMES)
def test_inspect_refuses_a_hostile_archive(hostile, kind):
    path = make(kind, hostile)
    proc = hostile.run("inspect", path)
    hostile.assert_clean(proc, code=2)
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert str(path) in err
    if kind in NAMES:
        assert "not an attribute path" in err and "refusing" in err
    else:
        assert "--trust" in err


@pytest.mark.parametrize("kind", ["pickled_weight", "quote_name", "guard"])
def test_every_command_refuses_a_hostile_archive(hostile, kind):
    path = make(kind, hostile)
    script = hostile.script([])
    out = hostile.dir / "out.py"
    runs = [
        ("export", path, "-o", out),
        ("apply", path, script, "-o", out),
        ("compare", path, script),
        (path, "--screenshot", hostile.dir / "shot.png"),
    ]
    for argv in runs:
        proc = hostile.run(*argv)
        hostile.assert_clean(proc)
        assert proc.returncode != 0, (argv, proc.stdout)
        assert not out.exists(), argv
    assert not list(hostile.dir.glob("out.weights*")), "an export wrote weights"


@pytest.mark.parametrize("kind", PICKLES + CODE)
def test_with_trust_torch_runs_the_payload(hostile, kind):
    """The same files are hostile: torch.export.load (what --trust uses) and running the module run them."""
    path = make(kind, hostile)
    hostile.run("compare", path, hostile.script([]), "--trust")
    assert hostile.marker.exists(), f"the {kind} archive did not run its payload even with --trust"


def test_a_pickled_plain_tensor_weight_loads_with_weights_only(hostile):
    """``use_pickle`` on an ordinary tensor is read with weights_only=True, not refused."""
    import torch

    base = h.save_tiny(hostile.dir / "base.pt2")

    def edit(records):
        config_name = "data/weights/model_weights_config.json"
        config = json.loads(records[config_name])
        config["config"]["lin.weight"].update(use_pickle=True, path_name="weight_pickled")
        records["data/weights/weight_pickled"] = h.pickled(torch.nn.Parameter(torch.full((2, 3), 0.5)))
        records[config_name] = json.dumps(config).encode()

    path = h.rewrite(base, hostile.dir / "pickled_plain.pt2", edit)
    proc = hostile.run("inspect", path)
    hostile.assert_clean(proc, code=0)
    assert "linear" in proc.stdout


def _drop(name):
    def edit(records):
        del records[name]
    return edit


def _set(name, data: bytes):
    def edit(records):
        records[name] = data
    return edit


@pytest.mark.parametrize("edit", [
    _set("data/weights/model_weights_config.json", b"[1, 2]"),
    _set("models/model.json", b"not json"),
    _set("models/model.json", b'{"graph_module": 5}'),
    _set("archive_version", b"999"),
    _drop("data/weights/weight_0"),
    _drop("models/model.json"),
    _set("data/constants/model_constants_config.json", b'{"config": {"c": {"path_name": "opaque_obj_0"}}}'),
], ids=["config-list", "model-not-json", "model-wrong-types", "version", "missing-weight", "no-program",
        "opaque-constant"])
def test_a_damaged_archive_is_one_load_error(tmp_path, edit):
    from fxstudio.core.errors import LoadError
    from fxstudio.core.loading import load_model

    path = h.rewrite(h.save_tiny(tmp_path / "base.pt2"), tmp_path / "damaged.pt2", edit)
    with pytest.raises(LoadError) as caught:
        load_model(path)
    assert str(path) in str(caught.value) and len(str(caught.value).splitlines()) == 1


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path):
    import zipfile

    from fxstudio.core.errors import LoadError
    from fxstudio.core.loading import load_model

    path = h.save_tiny(tmp_path / "bomb.pt2")
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf:
        top = zf.namelist()[0].split("/", 1)[0]
        zf.writestr(f"{top}/extra/padding", b"\0" * (256 << 20))
    assert path.stat().st_size < 2 << 20
    with pytest.raises(LoadError, match="zip bomb"):
        load_model(path)


def test_compiled_aotinductor_code_is_not_loaded(tmp_path):
    from fxstudio.core.loading import load_model

    path = h.rewrite(h.save_tiny(tmp_path / "base.pt2"), tmp_path / "aoti.pt2",
                     _set("data/aotinductor/model/model.so", b"\x7fELF not a library"))
    loaded = load_model(path)
    assert any("AOTInductor" in note for note in loaded.notes)


def test_an_archive_whose_graph_calls_a_file_operator_is_refused(hostile):
    """A node of the archived graph retargeted to ``aten.from_file`` (which creates the file it
    names): refused as data before torch deserializes the graph, in every command."""
    base = h.save_tiny(hostile.dir / "base.pt2")
    marker = str(hostile.marker)

    def retarget(program):
        nodes = program["graph_module"]["graph"]["nodes"]
        nodes[0]["target"] = "torch.ops.aten.from_file.default"
        nodes[0]["inputs"] = [{"name": "filename", "arg": {"as_string": marker}, "kind": 1}]

    path = h.program_edit(base, hostile.dir / "from_file.pt2", retarget)
    proc = hostile.run("inspect", path)
    hostile.assert_clean(proc, code=2)
    assert "aten.from_file" in proc.stderr and "files" in proc.stderr and proc.stderr.count("\n") == 1
    proc = hostile.run("compare", path, path)
    hostile.assert_clean(proc, code=2)
