"""A trace failure's suggested fix as data (``TraceError.remedy``), and that applying it opens the model."""

from fxstudio.core.loading import load_model
from fxstudio.core.loading.trace_diagnostics import TraceRemedy
from fxstudio.resources import example_path
from tests.core.loading.trace_helpers import HELPER_LEN, fails
from tests.model_files import write_model as write


def reopen(spec, remedy: TraceRemedy, **options):
    """``load_model`` with the remedy's options, parsed as the window parses them."""
    from fxstudio.qt.open_flow import load_options

    return load_model(spec, **load_options({**options, **remedy.options()}))


def test_data_branch_remedy_is_a_concrete_arg_that_opens_it():
    spec = example_path("data_branch.py")
    remedy = fails(spec).remedy
    assert remedy == TraceRemedy("fx", concrete_args=("positive=True",))
    assert "--concrete-arg positive=" in str(fails(spec))  # the text names the same flag
    loaded = reopen(spec, remedy)
    assert any(n.op == "call_function" for n in loaded.graph_module.graph.nodes)
    assert any("concrete args positive=True" in note for note in loaded.notes)


def test_export_tracer_remedy_keeps_the_tracer():
    spec = example_path("data_branch.py")
    remedy = fails(spec, tracer="export").remedy
    assert remedy.tracer == "export" and remedy.concrete_args == ("positive=True",)
    assert remedy.options()["tracer"] == "export"
    reopen(spec, remedy)


def test_literal_default_is_suggested_as_the_value(tmp_path):
    f = write(tmp_path / "flagged.py", """
    class Net(nn.Module):
        def forward(self, x, scale=2.5):
            if scale > 1:
                return x * scale
            return x

    EXAMPLE_INPUTS = (torch.ones(2),)
    """)
    remedy = fails(f).remedy
    assert remedy.concrete_args == ("scale=2.5",)
    reopen(f, remedy)


def test_helper_remedy_is_autowrap(tmp_path):
    f = write(tmp_path / "helper_len.py", HELPER_LEN)
    remedy = fails(f).remedy
    assert remedy == TraceRemedy("fx", autowrap_functions=("per_row",))
    assert remedy.options() == {"tracer": "fx", "autowrap_functions": ["per_row"]}
    reopen(f, remedy)


def test_submodule_remedy_is_a_leaf_module(tmp_path):
    f = write(tmp_path / "inner.py", """
    class Inner(nn.Module):
        def forward(self, x):
            return x / len(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x) * 2

    EXAMPLE_INPUTS = (torch.ones(3, 2),)
    """)
    f = f"{f}::Net"
    remedy = fails(f).remedy
    assert remedy.leaf_modules == ("inner",) and not remedy.concrete_args
    loaded = reopen(f, remedy)
    assert [n.target for n in loaded.graph_module.graph.nodes if n.op == "call_module"] == ["inner"]
