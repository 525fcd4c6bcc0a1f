"""Walk-throughs of the Properties fields with real X input: click a card, click a field, type,
Enter / Tab / Escape, undo and redo from the field and from the canvas, add a keyword, save."""

from __future__ import annotations

import json

from tests.e2e.xsession import EXAMPLES


def test_type_a_constant_and_press_enter(launch):
    app = launch(EXAMPLES / "add_mul.py")
    g = app.click_card("mul")
    assert g["edits"] == 0 and not g["undo_enabled"]
    app.click(app.rect("field:1"))
    app.wait_for(lambda g: g["focus"].get("field") == "field:1", what="the focus in mul's second argument")
    app.key("ctrl+a")
    app.type("10")
    g = app.wait_for(lambda g: g["widgets"]["field:1:state"] == "pending", what="the typed text shown as not applied")
    assert g["edits"] == 0
    app.shot("01_typed_not_applied")
    app.key("Return")
    g = app.wait_for(lambda g: g["edits"] == 1, what="Enter to apply one edit")
    assert g["status_edits"] == "1 edit, unsaved"
    assert g["undo_enabled"] and g["history"] == ["Set mul.args[1] = 10"]
    assert g["title"].startswith("add_mul.py") and " *" in g["title"]
    assert g["focus"].get("field") == "field:1" and g["focus"]["text"] == "10"
    assert g["widgets"]["field:1:state"] == ""
    app.shot("02_enter_applied")

    # Undo and redo with the focus still in the field: the window's, not the field's text undo.
    app.key("ctrl+z")
    g = app.wait_for(lambda g: g["edits"] == 0, what="Ctrl+Z in the field to undo the edit")
    assert not g["undo_enabled"] and g["redo_enabled"] and g["focus"].get("text") == "2"
    app.key("ctrl+shift+z")
    g = app.wait_for(lambda g: g["edits"] == 1, what="Ctrl+Shift+Z in the field to redo it")
    assert g["focus"].get("text") == "10"

    # The same from the canvas.
    app.click_card("add")
    app.key("ctrl+z")
    g = app.wait_for(lambda g: g["edits"] == 0, what="Ctrl+Z on the canvas")
    app.key("ctrl+y")
    g = app.wait_for(lambda g: g["edits"] == 1, what="Ctrl+Y on the canvas")
    assert g["focus"]["class"] == "GraphCanvas"

    # Ctrl+S: the save dialog opens on <model>.edits.json in the working folder; Enter saves there.
    app.key("ctrl+s")
    app.dialog("Save edit script")
    app.key("Return")
    g = app.wait_for(lambda g: g["script_path"] and "saved" in g["status_edits"], what="the script saved")
    script = json.loads((app.work / "add_mul.edits.json").read_text())
    assert script == {"format": "fxstudio.edits/1",
                      "edits": [{"op": "set_arg", "node": "mul", "key": 1, "value": "10"}]}


def test_escape_reverts_and_tab_applies(launch):
    app = launch(EXAMPLES / "clamp.py")
    app.click_card("clamp")
    app.click(app.rect("field:max"))
    app.key("ctrl+a")
    app.type("1.5")
    app.wait_for(lambda g: g["widgets"]["field:max:state"] == "pending", what="pending text")
    app.key("Escape")
    g = app.wait_for(lambda g: g["focus"].get("text") == "5.0", what="Escape to put 5.0 back")
    assert g["edits"] == 0 and g["widgets"]["field:max:state"] == ""
    app.key("ctrl+a")
    app.type("2.5")
    app.key("Tab")
    g = app.wait_for(lambda g: g["edits"] == 1, what="Tab to apply the typed value")
    assert g["history"] == ["Set clamp.max = 2.5"]
    assert g["focus"]["class"] != "ValueField" or g["focus"].get("field") != "field:max"  # Tab moved on


def test_add_a_keyword(launch):
    app = launch(EXAMPLES / "two_linear.py")
    app.click_card("add")
    app.click(app.rect("add_keyword:name"))
    app.type("alpha")
    app.key("Return")  # the name's Enter moves to the value
    app.wait_for(lambda g: g["focus"]["class"] == "ValueField", what="the focus in the value field")
    app.type("0.5")
    app.key("Return")
    g = app.wait_for(lambda g: g["edits"] == 1, what="the keyword added")
    assert g["history"] == ["Set add.alpha = 0.5"]
    assert "field:alpha" in g["widgets"]
    app.shot("03_keyword_added")


def test_tab_walks_the_fields_in_order_and_invalid_text_is_refused(launch):
    app = launch(EXAMPLES / "clamp.py")
    app.click_card("clamp")
    app.click(app.rect("name_field"))
    app.wait_for(lambda g: g["focus"]["name"] == "fxsNameField", what="the focus in the name field")
    seen = []
    for _ in range(3):
        app.key("Tab")
        g = app.wait_still(0.2)
        seen.append(g["focus"].get("field") or g["focus"]["class"])
    assert seen == ["TargetEditor", "field:0", "field:min"]
    app.key("ctrl+a")
    app.type("(1, ")
    app.wait_for(lambda g: g["widgets"]["field:min:state"] == "invalid", what="unparsable text marked")
    app.key("Return")
    g = app.wait_for(lambda g: g["status_message"].startswith("Refused"), what="Enter on invalid text refused")
    assert g["edits"] == 0
    app.shot("12_invalid_refused")
