"""A read-only code pane: pygments highlighting, line numbers, one highlighted line, line clicks."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QPainter, QTextCharFormat, QTextCursor, QTextFormat, QTextLayout
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget
from pygments.lexers import PythonLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, String, Token

from fxstudio.core.code_lines import LineEdit, check_edits, new_number

# A light palette close to common IDE defaults; the first matching token type wins.
_PALETTE = [
    (Comment, "#6a737d", False, True),
    (Keyword, "#8839ef", True, False),
    (Name.Builtin, "#1e66f5", False, False),
    (Name.Function, "#1e66f5", True, False),
    (Name.Class, "#df8e1d", True, False),
    (Name.Decorator, "#df8e1d", False, False),
    (String, "#40a02b", False, False),
    (Number, "#d20f39", False, False),
    (Operator.Word, "#8839ef", True, False),
]


def _format_for(token) -> QTextCharFormat | None:
    for ttype, color, bold, italic in _PALETTE:
        if token in ttype:
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(color))
            if bold:
                fmt.setFontWeight(QFont.Weight.DemiBold)
            fmt.setFontItalic(italic)
            return fmt
    return None


class VisibleHighlighter:
    """Pygments highlighting applied only to the lines on screen, as they come into view.

    A ``QSyntaxHighlighter`` re-lexes every line whenever the text is replaced: 10k lines of
    generated code then cost seconds per edit. Lexing one line costs well under a millisecond, so
    colouring the forty visible lines on each scroll or repaint is instant at any file size.
    Generated FX code and ordinary model files have no multi-line tokens that matter here
    (a docstring's inner lines stay plain).
    """

    def __init__(self, editor: QPlainTextEdit):
        self.editor = editor
        self._lexer = PythonLexer(stripnl=False, ensurenl=False)
        self._formats: dict = {}
        self._done: set[int] = set()

    def reset(self) -> None:
        """Forget what was coloured (the text was replaced)."""
        self._done.clear()

    def forget(self, numbers) -> None:
        """Drop the colours of the blocks ``numbers`` (0-based; their text was replaced): they are
        coloured again when next in view."""
        doc = self.editor.document()
        for number in numbers:
            self._done.discard(number)
            block = doc.findBlockByNumber(number)
            if block.isValid() and block.layout() is not None:
                block.layout().clearFormats()

    def shift(self, edits: Sequence[LineEdit]) -> None:
        """Follow line edits: lines that moved keep their colours; edited lines, and the line after
        each edit (a line break inserted or removed there may have split or joined its block), are
        coloured again when next in view."""
        done = set()
        for number in self._done:
            moved = new_number(number + 1, edits)
            if moved is not None:
                done.add(moved - 1)
        doc = self.editor.document()
        shift = 0
        for e in edits:
            start = e.start - 1 + shift
            for number in range(start, start + len(e.texts) + 1):
                done.discard(number)
                block = doc.findBlockByNumber(number)
                if block.isValid() and block.layout() is not None:
                    block.layout().clearFormats()
            shift += e.delta
        self._done = done

    def highlight_visible(self) -> None:
        """Colour the lines in view (and a few around them) not coloured yet."""
        ed = self.editor
        block = ed.firstVisibleBlock()
        first = block.blockNumber()
        lines = max(1, ed.viewport().height() // max(1, ed.fontMetrics().height()))
        start = ed.document().findBlockByNumber(max(0, first - 5))
        end_number = first + lines + 5
        block = start
        changed = False
        first_pos, last_pos = start.position(), start.position()
        while block.isValid() and block.blockNumber() <= end_number:
            last_pos = block.position() + block.length()
            number = block.blockNumber()
            if number not in self._done:
                self._done.add(number)
                ranges = self._ranges(block.text())
                if ranges:
                    block.layout().setFormats(ranges)
                    changed = True
            block = block.next()
        if changed:
            # As QSyntaxHighlighter does: relayout those lines so the new formats are drawn.
            ed.document().markContentsDirty(first_pos, last_pos - first_pos)
            ed.viewport().update()

    def _ranges(self, text: str) -> list:
        ranges = []
        pos = 0
        for token, value in self._lexer.get_tokens(text):
            n = len(value)
            if token is not Token.Text and n:
                if token not in self._formats:
                    self._formats[token] = _format_for(token)
                fmt = self._formats[token]
                if fmt is not None:
                    r = QTextLayout.FormatRange()
                    r.start, r.length, r.format = pos, n, fmt
                    ranges.append(r)
            pos += n
        return ranges


def _edit_block_range(doc, cursor: QTextCursor, edit: LineEdit) -> None:
    """Apply one line edit to ``doc`` with ``cursor`` (inside the caller's edit block)."""
    count = doc.blockCount()
    texts = "\n".join(edit.texts)
    if not edit.removed and not edit.texts:
        return
    if edit.removed:
        cursor.setPosition(doc.findBlockByNumber(edit.start - 1).position())
        last = doc.findBlockByNumber(edit.start + edit.removed - 2)
        cursor.setPosition(last.position() + last.length() - 1, QTextCursor.MoveMode.KeepAnchor)
        if edit.texts:
            cursor.insertText(texts)
            return
        # Removing whole lines: take a line break with them (the following one, or at the end the one before).
        if edit.start + edit.removed <= count:
            cursor.setPosition(doc.findBlockByNumber(edit.start + edit.removed - 1).position(),
                               QTextCursor.MoveMode.KeepAnchor)
        elif edit.start > 1:
            end = cursor.position()
            before = doc.findBlockByNumber(edit.start - 2)
            cursor.setPosition(before.position() + before.length() - 1)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
    elif edit.start <= count:
        cursor.setPosition(doc.findBlockByNumber(edit.start - 1).position())
        cursor.insertText(texts + "\n")
    else:
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText("\n" + texts)


class _LineNumbers(QWidget):
    def __init__(self, editor: "CodeEditor"):
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(self.editor.gutter_width(), 0)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        self.editor.paint_gutter(event)


class CodeEditor(QPlainTextEdit):
    """Read-only highlighted code with a line-number gutter; emits ``line_clicked(line, word)``."""

    line_clicked = Signal(int, str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSize(max(9, font.pointSize()))
        self.setFont(font)
        self.setUndoRedoEnabled(False)  # read-only: line replacements must not pile up an undo stack
        self.highlighter = VisibleHighlighter(self)
        self._gutter = _LineNumbers(self)
        self._line = 0
        self.blockCountChanged.connect(lambda _n: self._update_margins())
        self.updateRequest.connect(self._scroll_gutter)
        self._update_margins()

    def gutter_width(self) -> int:
        """Width of the line-number gutter for the current line count."""
        digits = max(3, len(str(self.blockCount())))
        return 10 + self.fontMetrics().horizontalAdvance("9") * digits

    def _update_margins(self) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _scroll_gutter(self, rect: QRect, dy: int) -> None:
        self.highlighter.highlight_visible()
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        self.highlighter.highlight_visible()
        cr = self.contentsRect()
        self._gutter.setGeometry(QRect(cr.left(), cr.top(), self.gutter_width(), cr.height()))

    def paint_gutter(self, event) -> None:
        """Draw the visible line numbers, the highlighted line's in bold."""
        painter = QPainter(self._gutter)
        painter.fillRect(event.rect(), QColor("#f3f4f6"))
        block = self.firstVisibleBlock()
        number = block.blockNumber()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(self.blockBoundingRect(block).height())
            if block.isVisible() and bottom >= event.rect().top():
                current = number + 1 == self._line
                painter.setPen(QColor("#1f2937" if current else "#9ca3af"))
                font = self.font()
                font.setBold(current)
                painter.setFont(font)
                painter.drawText(0, top, self._gutter.width() - 6, height, Qt.AlignmentFlag.AlignRight, str(number + 1))
            block = block.next()
            top = bottom
            number += 1
        painter.end()

    def set_code(self, text: str) -> None:
        """Replace the text, keeping the scroll position when the text is an edit of the previous one."""
        bar = self.verticalScrollBar().value()
        self.highlighter.reset()
        self.setPlainText(text)
        self.verticalScrollBar().setValue(bar)
        self.highlight_line(self._line, scroll=False)
        self.highlighter.highlight_visible()

    def replace_lines(self, lines: dict[int, str]) -> None:
        """Replace whole lines (1-based number → new text without a newline) in place.

        The rest of the document, its colouring and the scroll position stay; a replaced line is
        coloured again when in view. Far cheaper than :meth:`set_code` on a long text.
        """
        if not lines:
            return
        doc = self.document()
        if any(not 1 <= number <= doc.blockCount() for number in lines) or any("\n" in t for t in lines.values()):
            raise ValueError("replace_lines: a line number out of range or a text with a newline")
        vbar, hbar = self.verticalScrollBar().value(), self.horizontalScrollBar().value()
        cursor = QTextCursor(doc)
        cursor.beginEditBlock()
        for number, text in sorted(lines.items()):
            block = doc.findBlockByNumber(number - 1)
            cursor.setPosition(block.position())
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
            cursor.insertText(text)
        cursor.endEditBlock()
        self.highlighter.forget(number - 1 for number in lines)
        self.verticalScrollBar().setValue(vbar)
        self.horizontalScrollBar().setValue(hbar)
        self.highlighter.highlight_visible()

    def edit_lines(self, edits: Sequence[LineEdit]) -> None:
        """Apply line edits (:class:`fxstudio.core.code_lines.LineEdit`: lines inserted, removed and
        replaced, numbered in the text before) in place.

        Only replacements: :meth:`replace_lines`. Otherwise the rest of the document and its colours
        stay, the view keeps showing the same lines (scrolled by the lines added or removed above
        them), and the edited lines are coloured when in view. Far cheaper than :meth:`set_code`.
        """
        if not edits:
            return
        if all(e.removed == len(e.texts) == 1 for e in edits):
            self.replace_lines({e.start: e.texts[0] for e in edits})
            return
        doc = self.document()
        check_edits(edits, doc.blockCount())
        vbar, hbar = self.verticalScrollBar(), self.horizontalScrollBar()
        top, left = vbar.value(), hbar.value()
        # Keep the same lines in view: scroll by what the edits above the first visible line added.
        top += sum(e.delta for e in edits if e.start <= top and e.start + e.removed <= top + 1)
        cursor = QTextCursor(doc)
        cursor.beginEditBlock()
        for e in reversed(edits):
            _edit_block_range(doc, cursor, e)
        cursor.endEditBlock()
        self.highlighter.shift(edits)
        vbar.setValue(top)
        hbar.setValue(left)
        self.highlighter.highlight_visible()

    def highlight_line(self, line: int, *, scroll: bool = True) -> None:
        """Mark 1-based ``line`` (0 for none) with a full-width band and scroll it into view."""
        self._line = line
        selections = []
        block = self.document().findBlockByNumber(line - 1) if line > 0 else None
        if block is not None and block.isValid():
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(QColor("#fff3bf"))
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            sel.cursor = QTextCursor(block)
            selections.append(sel)
            if scroll:
                cursor = QTextCursor(block)
                self.setTextCursor(cursor)
                self.centerCursor()
        self.setExtraSelections(selections)
        self._gutter.update()

    def current_line(self) -> int:
        """The highlighted 1-based line, 0 when none."""
        return self._line

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().mouseReleaseEvent(event)
        if event.button() != Qt.MouseButton.LeftButton or self.textCursor().hasSelection():
            return
        cursor = self.cursorForPosition(event.position().toPoint())
        line = cursor.blockNumber() + 1
        cursor.select(QTextCursor.SelectionType.WordUnderCursor)
        self.line_clicked.emit(line, cursor.selectedText())
