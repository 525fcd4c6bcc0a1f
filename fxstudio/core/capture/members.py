"""Reading a capture file's zip members and its JSON manifest within fixed bounds, and showing
the strings it holds (``printable``: escaped, cut to a length).

A member is read only after its declared (decompressed) size passes the limit it is read under,
and never past that size: ``zipfile`` stops a member at its declared size, and a member that holds
more or less than it declares fails its CRC check. Only stored and deflated members are read
(a bzip2 or lzma member may decompress one small chunk into gigabytes in a single call). The
manifest's JSON is measured before it is parsed (containers, items, nesting depth) so that
``json.loads`` builds at most a bounded number of Python objects.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

from fxstudio.core.budgets import byte_text
from fxstudio.core.errors import LoadError

READABLE_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}

MAX_JSON_CONTAINERS = 2_000_000
"""Objects and arrays a manifest may hold (a 200k-node graph has about 600k)."""
MAX_JSON_ITEMS = 8_000_000
"""Values and keys a manifest may hold (a 200k-node graph has about 4.5 million): at most a few
hundred MB of Python objects, whatever they are."""
MAX_JSON_DEPTH = 64
"""How deeply a manifest's objects and arrays may nest (a capture nests about 8 deep)."""

# Bytes of JSON text that open (+1) or close (-1) an object or array.
_DEPTH_STEP = np.zeros(256, dtype=np.int8)
_DEPTH_STEP[[ord("["), ord("{")]] = 1
_DEPTH_STEP[[ord("]"), ord("}")]] = -1
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def printable(value: object, limit: int = 300) -> str:
    """Text from a capture file for the terminal: at most ``limit`` characters, every character that
    is not printable escaped (``\\x1b``, ``\\r``, ``\\u202e``)."""
    text = value if isinstance(value, str) else brief(value)
    text = text[:limit]
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def brief(value: object) -> str:
    """A short ``repr`` of a value from the file: scalars as they are, containers by type and length
    (a manifest value may be a list of millions of items: never converted whole)."""
    if isinstance(value, (list, dict)):
        return f"<{type(value).__name__} of {len(value):,} items>"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"<int of {value.bit_length():,} bits>"
    return repr(value[:200] if isinstance(value, str) else value)[:200]


def shown_path(path: Path) -> str:
    """``path`` for a one-line message (a file name may hold control characters too)."""
    return printable(str(path), 400)


def open_zip(path: Path) -> zipfile.ZipFile:
    """``path`` as a zip archive; ``LoadError`` (one line) when it is not one or cannot be read."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError, zlib.error):
        raise LoadError(f"{shown_path(path)}: not a capture file (not a readable zip archive; truncated or "
                        "damaged?).") from None
    except OSError as exc:
        raise LoadError(f"{shown_path(path)}: cannot read it ({exc.strerror or exc}).") from None


def member_info(zf: zipfile.ZipFile, path: Path, name: str) -> zipfile.ZipInfo:
    """The entry of member ``name``, refused (``LoadError``) before anything is read when it is
    encrypted or compressed with a method fxstudio does not read. Its declared ``file_size`` is
    what the caller checks against its limit."""
    info = zf.getinfo(name)
    if info.compress_type not in READABLE_METHODS:
        raise LoadError(f"{shown_path(path)}: {name} is compressed with zip method {info.compress_type}; fxstudio "
                        "reads only stored or deflated members. Not read.")
    if info.flag_bits & 0x1:
        raise LoadError(f"{shown_path(path)}: {name} is encrypted; not read.")
    return info


def check_declared_size(path: Path, info: zipfile.ZipInfo, limit: int, what: str) -> None:
    """``LoadError`` when ``info`` declares more than ``limit`` bytes once decompressed."""
    if info.file_size > limit:
        raise LoadError(f"{shown_path(path)}: {info.filename} declares {byte_text(info.file_size)} once "
                        f"decompressed, more than the {byte_text(limit)} fxstudio reads for {what}; not read.")


def read_member(zf: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo) -> bytes:
    """The bytes of ``info`` (already passed by ``member_info``), read no further than its declared
    size; ``LoadError`` when the member is damaged or holds other than it declares."""
    try:
        with zf.open(info) as member:
            data = member.read(info.file_size + 1)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError, NotImplementedError, zlib.error) as exc:
        raise LoadError(f"{shown_path(path)}: {info.filename} cannot be read ({type(exc).__name__}); "
                        "the file is damaged.") from None
    if len(data) != info.file_size:
        raise LoadError(f"{shown_path(path)}: {info.filename} holds {len(data):,} bytes but declares "
                        f"{info.file_size:,}; the file is damaged.")
    return data


def check_json_size(text: bytes, path: Path, name: str) -> None:
    """Refuse (``LoadError``) JSON that would build too many objects or nest too deeply, measured
    on the bytes outside strings before any parsing (vectorized: a second or so for 64 MiB)."""
    # Escaped backslashes, then escaped quotes, go first (left to right, as JSON reads them): every
    # quote left opens or closes a string, so a byte is inside one when an odd number precede it.
    # Outside strings JSON has no backslashes: invalid text is measured as well as valid text.
    unescaped = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    codes = np.frombuffer(unescaped, dtype=np.uint8)
    inside = np.logical_xor.accumulate(codes == ord('"'))
    bare = (codes * ~inside).tobytes()  # string bytes become NUL, which JSON has nowhere else
    containers = bare.count(b"{") + bare.count(b"[")
    if containers > MAX_JSON_CONTAINERS:
        raise LoadError(f"{shown_path(path)}: {name} holds more than {MAX_JSON_CONTAINERS:,} JSON objects and arrays "
                        f"({containers:,}); not read.")
    items = containers + bare.count(b",") + bare.count(b":")
    if items > MAX_JSON_ITEMS:
        raise LoadError(f"{shown_path(path)}: {name} holds more than {MAX_JSON_ITEMS:,} JSON values ({items:,}); "
                        "not read.")
    steps = _DEPTH_STEP[np.frombuffer(bare.translate(None, _NOT_BRACKETS), dtype=np.uint8)]
    depth = int(np.cumsum(steps, dtype=np.int32).max()) if steps.size else 0
    if depth > MAX_JSON_DEPTH:
        raise LoadError(f"{shown_path(path)}: {name} nests JSON more than {MAX_JSON_DEPTH} levels deep; not read.")
