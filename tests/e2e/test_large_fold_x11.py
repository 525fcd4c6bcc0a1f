"""A 20,402-node model in the real window, with real X input (issue #28): it opens with its modules
folded and the status bar says why; a click on the folded module's + lays it out in a worker while
the window says so, then shows its 3,400 blocks, each folded; a click on one block opens it."""

from __future__ import annotations

from fxstudio.testing.residual_mlp import write_residual_mlp

BLOCKS = 3_400


def test_a_large_model_opens_folded_and_its_modules_open_on_a_click(launch, tmp_path):
    model = write_residual_mlp(tmp_path, blocks=BLOCKS)
    app = launch(model, open_timeout=180)
    g = app.wait_for(lambda g: "blocks" in g["folded"], what="the model open with 'blocks' folded")
    assert set(g["cards"]) == {"x", "output"} and g["folded"]["blocks"]["visible"]
    assert "so its modules are folded" in g["status_message"], g["status_message"]
    app.shot("l1_large_model_folded")

    app.click_at(*g["folded"]["blocks"]["toggle"])
    # the snapshot that says so is written by the GUI thread while the worker lays the blocks out
    app.wait_for(lambda g: g["status_message"].startswith("Laying out blocks"), what="the layout started")
    g = app.wait_for(lambda g: g["status_message"].startswith("Laid out blocks") and "blocks.0" in g["folded"],
                     what="the blocks laid out, each folded", timeout=120)
    assert "blocks" not in g["folded"]
    app.wait_still()
    app.shot("l2_blocks_opened_each_folded")

    g = app.fresh()
    block = min(g["folded"], key=lambda p: int(p.rsplit(".", 1)[1]))
    app.click_at(*g["folded"][block]["toggle"])
    i = block.rsplit(".", 1)[1]
    g = app.wait_for(lambda g: f"blocks_{i}_fc1" in g["cards"] and block not in g["folded"],
                     what=f"{block} opened", timeout=120)
    assert g["edits"] == 0   # opening modules is a view change, never an edit
    app.shot("l3_one_block_opened")
