"""View ▸ Fold Repeated Blocks with real X input (issue #26, defect 2): on a 40-block model, a block
whose ``mul`` constant was edited in Properties stays unfolded while the others fold; after a Run,
the blocks that diverged unfold too; Find (Ctrl+F, the name, Enter) goes to a folded-away node,
which unfolds its span and shows the node."""

from __future__ import annotations

from tests.e2e.test_passes import _menu_entry
from tests.e2e.test_run_and_keys import _on_screen
from tests.model_files import REPEATED_BLOCKS as BLOCKS, REPEATED_BLOCKS_BODY, write_model

EDITED = 20   # the block whose mul constant is edited


def _blocks(lo: int, hi: int) -> set[str]:
    """The names of the ``mul`` nodes of blocks ``lo`` … ``hi - 1`` (block 0's is ``mul``)."""
    return {f"mul_{i}" if i else "mul" for i in range(lo, hi)}


def test_fold_keeps_the_edited_and_diverged_blocks_and_a_click_unfolds(launch, tmp_path):
    model = write_model(tmp_path / "blocks.py", REPEATED_BLOCKS_BODY)
    app = launch(f"{model}::Net")
    edited = f"mul_{EDITED}"
    # Find the edited block's mul (Ctrl+F, its name, Enter) and set its constant in Properties.
    app.key("ctrl+f")
    app.type(f"{edited}$")
    app.key("Return")
    app.wait_for(lambda g: g["selected"] == edited, what=f"{edited} found and selected")
    app.key("Escape")
    app.click(app.rect("field:1"))
    app.wait_for(lambda g: g["focus"].get("field") == "field:1", what="the focus in field:1")
    app.key("ctrl+a")
    app.type("0.25")
    app.key("Return")
    g = app.wait_for(lambda g: g["edits"] == 1, what="the edit applied")
    assert g["history"] == [f"Set {edited}.args[1] = 0.25"]
    assert _blocks(0, BLOCKS) <= set(g["cards"])

    app.click(_menu_entry(app, "View", "Fold Repeated Blocks"))
    g = app.wait_for(lambda g: f"mul_{EDITED + 1}" not in g["cards"], what="the blocks folded")
    g = app.wait_still()
    cards = set(g["cards"])
    assert {"mul", edited} <= cards   # the representative and the edited block, drawn
    assert not (_blocks(1, EDITED) | _blocks(EDITED + 1, BLOCKS)) & cards   # the others folded
    app.shot("r1_folded_around_the_edited_block")

    # Run: everything from the edited block on diverges, and is unfolded.
    app.click(app.rect("tab:Run"))
    g = app.wait_for(lambda g: _on_screen(app, g["widgets"].get("run:run")), what="the Run dock raised")
    app.click(g["widgets"]["run:run"])
    g = app.wait_for(lambda g: g["run"]["report"] and not g["run"]["busy"] and _blocks(EDITED, BLOCKS) <= set(g["cards"]),
                     what="the run's report, and the diverged blocks unfolded", timeout=90)
    assert g["run"]["first_divergence"] == edited
    assert not _blocks(1, EDITED) & set(g["cards"])   # before the edit: equal, still folded
    app.wait_still()
    app.shot("r2_folded_after_the_run")

    # Find matches a folded-away node: typing leaves the fold, Enter selects it, which unfolds its
    # span and brings it on screen.
    app.click(app.rect("canvas"), dx=0.02)   # empty canvas: the focus back on it
    app.key("ctrl+f")
    app.type("mul_5$")
    g = app.wait_still()
    assert "mul_5" not in g["cards"] and g["selected"] != "mul_5"
    app.key("Return")
    g = app.wait_for(lambda g: g["selected"] == "mul_5" and "mul_5" in g["cards"] and g["cards"]["mul_5"]["visible"],
                     what="mul_5 unfolded, selected and on screen")
    assert _blocks(0, BLOCKS) <= set(g["cards"]) and g["edits"] == 1
    app.shot("r3_unfolded_by_find")
