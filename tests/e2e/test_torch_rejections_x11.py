"""Issue #26 defect 1 with real X input: ``mul``'s second argument typed as ``'hello'`` in Properties
applies, and torch's own check (fake-tensor propagation) rejects ``mul`` at once: the status bar
names the node and torch's message (replacing the stale one), the card is red with the message, the
lint field does not say ok, Problems lists it and a click on the row selects ``mul``; Ctrl+Z clears it."""

from __future__ import annotations

from tests.e2e.xsession import EXAMPLES, set_field

REJECTED = "torch rejects %mul: TypeError: only integer tensors of a single element can be converted to an index"
"""What torch raises for ``tensor * 'hello'`` (tests/core/edits/test_torch_rejections.py checks it
against torch itself)."""


def test_a_value_torch_rejects_is_said_at_once_and_undo_clears_it(launch):
    app = launch(EXAMPLES / "add_mul.py")
    g = app.wait_still()
    assert g["cards"]["mul"]["error"] == "" and "ok" in g["status_lint"]
    g = set_field(app, "mul", "field:1", "'hello'")
    assert g["history"] == ["Set mul.args[1] = 'hello'"]
    g = app.wait_for(lambda g: g["status_message"] == REJECTED, what="the status bar naming mul and torch's message")
    g = app.wait_for(lambda g: g["cards"]["mul"]["error"], what="mul's card red")
    assert g["cards"]["mul"]["error"] == "torch rejects this node: " + REJECTED.split(": ", 1)[1]
    assert g["cards"]["mul"]["shape"] == "rejected by torch" and g["cards"]["output"]["shape"] == "unknown"
    assert "torch rejects %mul" in g["status_lint"] and "ok" not in g["status_lint"]
    app.wait_still()
    app.shot("26_mul_rejected_by_torch")

    # Problems (a tab behind Code): one torch row naming mul; clicking it selects mul.
    app.click(app.rect("tab:Problems"))
    g = app.wait_for(lambda g: any(row["source"] == "torch" and row["rect"] for row in g["problems"]),
                     what="the torch row in Problems")
    [row] = [row for row in g["problems"] if row["source"] == "torch"]
    assert row["node"] == "mul" and REJECTED.split(": ", 1)[1] in row["message"]
    app.click_card("add")
    app.click(row["rect"], dx=0.5)
    app.wait_for(lambda g: g["selected"] == "mul", what="a click on the row selecting mul")
    app.shot("26_problems_row")

    app.key("ctrl+z")
    g = app.wait_for(lambda g: g["edits"] == 0, what="Ctrl+Z to undo the edit")
    g = app.wait_for(lambda g: g["cards"]["mul"]["error"] == "" and "torch rejects" not in g["status_message"],
                     what="the card and the status bar cleared")
    assert g["cards"]["mul"]["shape"] == "2×3 float32" and "ok" in g["status_lint"]
    app.wait_for(lambda g: not any(row["source"] == "torch" for row in g["problems"]), what="the torch row gone")
