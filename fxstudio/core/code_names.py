"""The one rule for names that become code: identifiers, and attribute paths of identifiers.

A name read from a file (a parameter path in a ``.pt2`` archive, a submodule path, a node name)
is written into generated Python by ``torch.fx`` itself (``self.lin.weight``, ``getattr(self, "0")``)
and by fxstudio's export. Such a name is used only after it passes the checks here; anything
else (a quote, a bracket, a newline) is refused with ``UnsafeNameError``.
"""

from __future__ import annotations

import keyword
import re

from fxstudio.core.errors import LoadError

_PART = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)\Z")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class UnsafeNameError(LoadError):
    """A name from a file that is not an identifier (path) and so cannot safely become code (exit 2)."""


def is_identifier(text: object) -> bool:
    """ASCII identifier that is not a Python keyword (``relu_1``; not ``a"b``, ``class`` or ``é``)."""
    return isinstance(text, str) and bool(_IDENTIFIER.match(text)) and not keyword.iskeyword(text)


def is_attribute_path(text: object, *, keywords: bool = False) -> bool:
    """Dot-joined identifiers or decimal indices (``layer1.0.conv1.weight``); not empty. Keywords
    (``a.class``) pass only with ``keywords=True``: they cannot inject code, only fail to compile."""
    if not isinstance(text, str) or not text:
        return False
    return all(_PART.match(part) and (keywords or not keyword.iskeyword(part)) for part in text.split("."))


def shown(text: object, limit: int = 60) -> str:
    """``text`` quoted for a one-line message: control characters escaped, long text cut."""
    value = repr(text)
    return value if len(value) <= limit else value[: limit - 3] + "..."


def check_identifier(text: object, what: str) -> str:
    """``text`` if it is an identifier, else ``UnsafeNameError`` naming ``what`` holds it."""
    if not is_identifier(text):
        raise UnsafeNameError(f"{what} {shown(text)} is not a Python identifier; refusing to turn it into code.")
    return text  # type: ignore[return-value]


def check_attribute_path(text: object, what: str) -> str:
    """``text`` if it is an attribute path, else ``UnsafeNameError`` naming ``what`` holds it."""
    if not is_attribute_path(text):
        raise UnsafeNameError(
            f"{what} {shown(text)} is not an attribute path (identifiers joined by dots); "
            "refusing to turn it into code."
        )
    return text  # type: ignore[return-value]
