"""Walk-throughs on the canvas with real X input: drag a port to rewire, a refused cycle, insert
after (Ctrl+I), erase with a replacement, search (Ctrl+F)."""

from __future__ import annotations

from tests.e2e.xsession import EXAMPLES


def _port(g: dict, card: str, key: int) -> list[int]:
    return next(p["at"] for p in g["cards"][card]["ports"] if p["key"] == key)


def test_drag_a_port_onto_another_card_rewires_and_a_cycle_is_refused(launch):
    app = launch(EXAMPLES / "sub_chain.py")  # x -> add -> sub -> mul -> output
    g = app.wait_still()
    app.shot("04_before_rewire")
    app.drag(_port(g, "mul", 0), g["cards"]["add"]["center"])
    g = app.wait_for(lambda g: g["edits"] == 1, what="the drop to rewire mul to add")
    assert g["history"] == ["Set mul.args[0] = %add"]
    g = app.wait_for(lambda g: any(p["src"] == "add" for p in g["cards"]["mul"]["ports"]),
                     what="mul's port now fed by add")
    app.wait_still()
    app.shot("05_after_rewire")

    # add's input dropped on mul would feed add from its own user: refused, nothing changes.
    g = app.wait_still()
    app.drag(_port(g, "add", 0), g["cards"]["mul"]["center"])
    g = app.wait_for(lambda g: "cycle" in g["status_message"].lower() or "refused" in g["status_message"].lower(),
                     what="the refused cycle reported")
    app.shot("06_cycle_refused")
    g = app.wait_still()
    assert g["edits"] == 1
    assert [p["src"] for p in g["cards"]["add"]["ports"]] == ["x"]


def test_insert_after_then_erase_with_a_replacement(launch):
    app = launch(EXAMPLES / "add_mul.py")
    app.click_card("add")
    app.key("ctrl+i")
    app.dialog("Insert after add")
    app.type("torch.relu")
    app.key("Return")
    g = app.wait_for(lambda g: g["edits"] == 1 and "relu" in g["cards"], what="relu inserted after add")
    assert [p["src"] for p in g["cards"]["mul"]["ports"]] == ["relu"]  # add's users go through relu
    g = app.wait_for(lambda g: g["selected"] == "relu", what="the new node selected")
    app.wait_still()
    app.shot("07_inserted_relu")

    app.click_card("relu")
    app.key("Delete")
    app.dialog("Erase relu")
    app.shot("08_erase_picker")
    app.key("Return")  # the picker offers relu's own input (add) first
    g = app.wait_for(lambda g: g["edits"] == 2 and "relu" not in g["cards"], what="relu erased")
    assert [p["src"] for p in g["cards"]["mul"]["ports"]] == ["add"]
    assert g["selected"] == "add"


def test_search_finds_and_selects(launch):
    app = launch(EXAMPLES / "residual_cnn.py")
    app.click(app.rect("canvas"), dx=0.05)
    app.key("ctrl+f")
    app.wait_for(lambda g: g["focus"]["class"] == "QLineEdit", what="the find field focused")
    app.type("relu")
    app.key("Return")
    g = app.wait_for(lambda g: g["selected"] and "relu" in g["selected"], what="a relu found and selected")
    first = g["selected"]
    assert g["cards"][first]["visible"]
    app.key("Return")
    g = app.wait_for(lambda g: g["selected"] != first and "relu" in g["selected"], what="the next match")
    assert g["cards"][g["selected"]]["visible"]
    app.shot("09_search")
