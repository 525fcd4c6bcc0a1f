"""Real X input: change tracking after a fusion and an erase (issue #26 item 9). The convs whose
weights the fusion rewrote are outlined as changed, the legend and the status bar agree on what
the pass did, and neither the fusion nor an erase leaves a hole in the layout."""

from __future__ import annotations

import re

from tests.e2e.test_passes import _menu_entry
from tests.e2e.xsession import EXAMPLES


def _gap(g: dict, upper: str, lower: str) -> int:
    """Screen pixels between the bottom of ``upper``'s card and the top of ``lower``'s."""
    _, y0, _, h0 = g["cards"][upper]["rect"]
    return g["cards"][lower]["rect"][1] - (y0 + h0)


def test_fusion_and_erase_are_tracked_and_close_up(launch, tmp_path):
    config = tmp_path / "app0" / "config"
    config.mkdir(parents=True)
    (config / "fxstudio.ini").write_text("[hints]\ncanvas_dismissed=true\n")
    app = launch(EXAMPLES / "conv_bn_relu.py")  # x → conv1 → bn1 → relu1 → conv2 → bn2 → relu2
    g = app.wait_still()
    step = _gap(g, "conv1", "bn1")  # the layout's gap between two cards of a chain
    assert step > 0

    app.click(_menu_entry(app, "Edit", "Run Pass…"))
    app.dialog("Run Pass")
    app.click(app.dialog("Run Pass")["widgets"]["passList"])  # a built-in is chosen by typing its name
    app.wait_for(lambda g: g["focus"].get("name") == "passList", what="the pass list focused")
    app.type("fxstudio.passes.fuse")
    app.key("Return")
    g = app.wait_for(lambda g: g["edits"] == 1, what="the fusion applied", timeout=60)
    g = app.wait_for(lambda g: "bn1" not in g["cards"] and g["view"]["legend_changes"],
                     what="the fused graph drawn with its legend")
    assert "fuse_conv_bn" in g["history"][0]

    # The convs hold new (fused) weights: outlined as changed, like the relus whose input changed.
    assert g["cards"]["conv1"]["change"] == "changed" and g["cards"]["conv2"]["change"] == "changed"
    # The status bar says what this pass did; the legend what changed since the original. After
    # one pass from the original, the two agree.
    status = re.search(r"this pass: (\d+) added, (\d+) removed, (\d+) changed", g["status_message"])
    assert status, g["status_message"]
    added, removed, changed = map(int, status.groups())
    legend = g["view"]["legend_changes"]
    assert f"{changed} changed" in legend and f"{removed} removed" in legend, legend
    assert (added, removed) == (0, 2)
    # No hole where bn1 was: conv1 is followed by relu1 at the layout's usual gap.
    assert _gap(g, "conv1", "relu1") <= step + 2
    app.shot("c9_fused_changes")

    app.click_card("relu1")
    app.key("Delete")
    app.dialog("Erase relu1")  # which input takes its place: the first, conv1's, by default
    app.key("Return")
    g = app.wait_for(lambda g: g["edits"] == 2 and "relu1" not in g["cards"], what="relu1 erased")
    g = app.wait_still()
    assert _gap(g, "conv1", "conv2") <= step + 2  # the erase closes up too
    legend = g["view"]["legend_changes"]
    assert "1 removed" not in legend and "3 removed" in legend, legend  # bn1, bn2 and relu1 since the original
    app.shot("c9_erased_closed_up")
