"""Random sequences of valid and invalid edits, undos, redos and history jumps on several models.

After every step the graph lints and ids are consistent; a refused edit changes nothing. At the
end, undoing everything gives the original code exactly, redoing everything gives the edited code
exactly, and replaying the recorded script on a fresh document gives that code again.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from fxstudio.core.document import Document, replay
from fxstudio.core.errors import EditRefused
from tests.core.edit_helpers import loaded_example

MODELS = ["residual_cnn.py", "transformer_block.py", "sub_chain.py", "relu_add.py", "conv_bn_relu.py",
          "two_linear.py", "clamp.py", "view_reshape.py"]
VALUES = ["1", "2.5", "-1", "None", "(1, 2)", "'a'", "inf", "True", "10 +", "%nope", "torch.float16", "[0, 1]",
          "'lambda'", "{[1]: 2}", "-" * 300 + "1"]
KEYWORDS = ["alpha", "max", "dim", "inplace", "bogus", "min", "lambda", "ｍax"]
NEW_TARGETS = ["torch.relu", "torch.sigmoid", "torch.neg", "operator.sub", "operator.add", "torch.flatten",
               "relu_add.my_relu", "model_file.nothing", "reshape", "transpose", "torch.nn.Dropout(p=0.5)",
               "torch.nn.Identity()", "torch.nn.Os()", "conv1"]
MATCHES = ["torch.relu", "operator.add", "operator.mul", "torch.flatten", "view", "torch.softmax", "linear1"]
NAMES = ["a1", "residual", "x_2", "relu", "2bad", "output_0", "lambda"]
index = st.integers(0, 10_000)
INSERTABLE = ("call_function", "call_method", "call_module", "get_attr")


class EditMachine(RuleBasedStateMachine):
    """One document on one example, driven through random edits."""

    @initialize(model=st.sampled_from(MODELS))
    def open_model(self, model):
        self.loaded = loaded_example(model)
        self.doc = Document(self.loaded)
        self.tip = None  # code at the end of the history, recorded after each applied edit

    # ------------------------------------------------------------------ helpers

    def src(self) -> str:
        return self.doc.edited.graph.python_code(root_module="self").src

    def pick(self, i, ops=None, exclude=None):
        nodes = [n for n in self.doc.edited.graph.nodes if (ops is None or n.op in ops) and n is not exclude]
        return nodes[i % len(nodes)] if nodes else None

    def attempt(self, *edits):
        before = self.src()
        try:
            if len(edits) == 1:
                self.doc.apply_edit(edits[0])
            else:
                self.doc.apply_edits(list(edits))
        except EditRefused as exc:
            assert exc.message and not getattr(exc, "internal", False), exc.message
            assert self.src() == before, f"refused {edits} changed the graph"
            return
        self.tip = self.src()

    # ------------------------------------------------------------------ edits

    @rule(i=index, k=st.integers(0, 3), value=st.sampled_from(VALUES))
    def set_positional(self, i, k, value):
        node = self.pick(i, INSERTABLE + ("output",))
        self.attempt({"op": "set_arg", "node": node.name, "key": k % (len(node.args) + 1), "value": value})

    @rule(i=index, key=st.sampled_from(KEYWORDS), value=st.sampled_from(VALUES))
    def set_keyword(self, i, key, value):
        node = self.pick(i, INSERTABLE)
        if node is not None:
            self.attempt({"op": "set_arg", "node": node.name, "key": key, "value": value})

    @rule(i=index, j=index, k=st.integers(0, 3))
    def rewire(self, i, j, k):
        user = self.pick(i, INSERTABLE + ("output",))
        new = self.pick(j)
        node_keys = [pos for pos, a in enumerate(user.args) if hasattr(a, "op")] or [0]
        self.attempt({"op": "set_arg", "node": user.name, "key": node_keys[k % len(node_keys)],
                      "value": f"%{new.name}"})

    @rule(i=index, new_target=st.sampled_from(NEW_TARGETS), splice=st.booleans(), before=st.booleans(),
          reroute=st.booleans())
    def insert(self, i, new_target, splice, before, reroute):
        target = new_target
        anchor = self.pick(i, ("placeholder",) + INSERTABLE)
        kind = "call_method" if target.isidentifier() else "call_module" if "(" in target or target == "conv1" \
            else "call_function"
        where = "before" if before else "after"
        edit = {"op": "insert", where: anchor.name, "kind": kind, "target": target, "args": f"(%{anchor.name},)"}
        if reroute:  # the window's default: one insert that moves the anchor's users (refused before)
            self.attempt({**edit, "reroute": True})
        elif splice and not before:
            edit["name"] = f"spliced{len(self.doc.history)}"
            self.attempt(edit, {"op": "replace_uses", "node": anchor.name, "with": edit["name"]})
        else:
            self.attempt(edit)

    @rule(i=index, j=index, replace=st.booleans())
    def erase(self, i, j, replace):
        node = self.pick(i)
        edit = {"op": "erase", "node": node.name}
        if replace:
            edit["replace_uses_with"] = self.pick(j).name
        self.attempt(edit)

    @rule(i=index, j=index)
    def replace_uses(self, i, j):
        self.attempt({"op": "replace_uses", "node": self.pick(i).name, "with": self.pick(j).name})

    @rule(match=st.sampled_from(MATCHES), new_target=st.sampled_from(NEW_TARGETS))
    def swap_targets(self, match, new_target):
        self.attempt({"op": "set_target", "match": match, "target": new_target})

    @rule(i=index, new_target=st.sampled_from(NEW_TARGETS))
    def set_target(self, i, new_target):
        self.attempt({"op": "set_target", "node": self.pick(i).name, "target": new_target})

    @rule(i=index, name=st.sampled_from(NAMES + [None]))
    def duplicate(self, i, name):
        edit = {"op": "duplicate", "node": self.pick(i).name}
        if name:
            edit["name"] = name
        self.attempt(edit)

    @rule(i=index, name=st.sampled_from(NAMES))
    def rename(self, i, name):
        self.attempt({"op": "rename", "node": self.pick(i).name, "name": name})

    @rule(i=index, key=st.sampled_from(KEYWORDS))
    def del_kwarg(self, i, key):
        self.attempt({"op": "del_kwarg", "node": self.pick(i).name, "key": key})

    @rule(i=index, j=index, check_first=st.booleans())
    def eliminate_dead_code(self, i, j, check_first):
        # usually after a rewire, which is what leaves dead nodes behind
        user, new = self.pick(i, INSERTABLE), self.pick(j)
        if user is not None and user.args:
            self.attempt({"op": "set_arg", "node": user.name, "key": 0, "value": f"%{new.name}"})
        edit = {"op": "eliminate_dead_code"}
        if check_first:
            before, reason = self.src(), self.doc.check_edit(edit)
            assert self.src() == before
            if reason is not None:
                return
        self.attempt(edit)

    @rule(bad=st.sampled_from([{"op": "set_arg", "node": "ghost", "key": 0, "value": "1"}, {"op": "warp"},
                               {"op": "erase"}, {"op": "rename", "node": "output", "name": "out"}, []]))
    def invalid(self, bad):
        self.attempt(bad)

    # ------------------------------------------------------------------ history

    @precondition(lambda self: self.doc.can_undo)
    @rule()
    def undo(self):
        self.doc.undo()

    @precondition(lambda self: self.doc.can_redo)
    @rule()
    def redo(self):
        self.doc.redo()

    @rule(k=index)
    def go_to(self, k):
        self.doc.go_to(k % (len(self.doc.history) + 1))

    # ------------------------------------------------------------------ checks

    @invariant()
    def graph_is_consistent(self):
        doc = self.doc
        doc.edited.graph.lint()
        compile(self.src(), "<edited>", "exec")  # the code a recompile would run is valid Python
        nodes = list(doc.edited.graph.nodes)
        ids = [doc.id_of(n) for n in nodes]
        assert len(set(ids)) == len(ids) and all(doc.node(i) is n for i, n in zip(ids, nodes))
        assert len(doc._state.by_id) == len(nodes)
        assert all(doc.find(n.name) is n for n in nodes) and doc.find("no_such_node") is None

    def teardown(self):
        doc = self.doc
        n = len(doc.history)
        doc.go_to(n)
        tip = self.src()
        if self.tip is not None:
            assert tip == self.tip
        doc.go_to(0)
        assert doc.module().code == doc.original.code
        doc.go_to(n)
        assert doc.module().code == tip
        if n:
            assert replay(self.loaded, doc.edit_script()).module().code == tip


# Profiles: the default run is derandomized (the same 500 sequences every time, for CI); the long
# one (HYPOTHESIS_PROFILE=long) draws 2,000 fresh sequences of 12 steps from a random seed and
# prints the blob that reproduces a failure.
settings.register_profile(
    "edits-default", max_examples=500, stateful_step_count=8, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "long", settings.get_profile("edits-default"), max_examples=2000, stateful_step_count=12,
    derandomize=False, print_blob=True,
)
_PROFILE = "long" if os.environ.get("HYPOTHESIS_PROFILE") == "long" else "edits-default"
EditMachine.TestCase.settings = settings.get_profile(_PROFILE)
test_random_edit_sequences = EditMachine.TestCase
if _PROFILE == "long":  # minutes, not the suite's per-test limit
    test_random_edit_sequences = pytest.mark.timeout(0)(test_random_edit_sequences)


def test_literal_into_getattr_object_is_refused():
    """Found by the fuzz: ``set_arg`` of ``1`` into ``getattr(x, 'shape')`` made fx write ``1.shape``,
    a syntax error, so the module no longer compiled. It is refused and changes nothing."""
    machine = EditMachine()
    machine.open_model("transformer_block.py")
    node = next(n for n in machine.doc.edited.graph.nodes if n.target is getattr)
    for value in ("1", "-1", "2.5", "None"):
        before = machine.src()
        reason = machine.doc.check_edit({"op": "set_arg", "node": node.name, "key": 0, "value": value})
        assert reason and "getattr" in reason, (value, reason)
        machine.attempt({"op": "set_arg", "node": node.name, "key": 0, "value": value})
        assert machine.src() == before
        machine.graph_is_consistent()
    machine.attempt({"op": "set_arg", "node": node.name, "key": 1, "value": "'lambda'"})
    machine.graph_is_consistent()
    machine.teardown()
