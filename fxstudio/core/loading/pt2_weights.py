"""A ``.pt2`` archive's weights and constants read as data, without torch's archive reader (issue #28).

torch's ``PT2ArchiveReader`` imports its whole deserializer (about 1.2 s) before it reads a byte;
the editable open (``pt2_editable``) needs only the records' bytes. Each record named by the
archive's weights/constants configuration is read with ``zipfile`` and viewed as a tensor of the
configuration's dtype, sizes, strides and offset, as ``_package._build_file_map`` and the full
loader do. Pickled payloads go through the reader's ``weights_only`` unpickling.
Anything this reader does not expect (a tensor on another device, a layout other than strided, a
dtype it does not know) is ``Unsupported``: the caller falls back to torch's full load.
"""

from __future__ import annotations

import json
import zipfile
from typing import Any

import torch

from fxstudio.core import fx_compat_export
from fxstudio.core.code_names import shown
from fxstudio.core.errors import LoadError
from fxstudio.core.loading import pt2_values
from fxstudio.core.loading.pt2_archive import _ZipRecords
from fxstudio.core.loading.pt2_values import Unsupported

STRIDED = 7  # schema.Layout.Strided
TENSOR_CONSTANT_PREFIX = "tensor_"  # what constants' record names start with (not opaque objects)


MODEL_NAME = "model"  # pt2_archive.MODEL_NAME: the program torch.export.load returns


class ArchiveRecords(_ZipRecords):
    """The archive's records, and its whole bytes read once when a weight is first read: the
    uncompressed records torch writes (aligned to 64 bytes) are then views into them."""

    def __init__(self, path):
        super().__init__(path)
        self.path = path
        self._whole: bytearray | None = None

    def whole(self) -> bytearray:
        """The archive's bytes (read on first use)."""
        if self._whole is None:
            with open(self.path, "rb") as f:
                self._whole = bytearray(f.read())
        return self._whole

    def stored_span(self, name: str) -> tuple[int, int] | None:
        """(offset, length) of record ``name``'s bytes in the file when it is stored uncompressed and
        its local header reads back (its signature, name and sizes as the directory has them), else None."""
        try:
            info = self.zip.getinfo(f"{self.top}/{name}")
        except KeyError:
            return None
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            return None
        data, at = self.whole(), info.header_offset
        header = bytes(data[at:at + 30])
        if len(header) < 30 or header[:4] != b"PK\x03\x04":
            return None
        start = at + 30 + int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
        if bytes(data[at + 30:at + 30 + len(info.orig_filename.encode())]) != info.orig_filename.encode():
            return None
        return (start, info.file_size) if start + info.file_size <= len(data) else None


def payloads_as_data(reader, records: set[str]) -> tuple[dict, dict, Any]:
    """(weights, constants, stored example inputs) of the archive ``reader`` (its ``_SafeReader``)
    reads, with ``zipfile`` and views of its bytes: the records and checks of torch's reader path;
    ``Unsupported`` for what only torch reads."""
    C = fx_compat_export.archive_constants()
    with ArchiveRecords(reader.path) as zip_records:
        if "byteorder" in records and zip_records.read_string("byteorder").strip() != "little":
            raise Unsupported("a big-endian archive")
        state_dict, constants = (
            read_payloads(reader, zip_records, records, kind, directory, config.format(MODEL_NAME))
            for kind, directory, config in (("weights", C.WEIGHTS_DIR, C.WEIGHTS_CONFIG_FILENAME_FORMAT),
                                            ("constants", C.CONSTANTS_DIR, C.CONSTANTS_CONFIG_FILENAME_FORMAT)))
        inputs_file = C.SAMPLE_INPUTS_FILENAME_FORMAT.format(MODEL_NAME)
        sample = reader._sample_inputs(zip_records.read_bytes(inputs_file) if inputs_file in records else b"")
    return state_dict, constants, sample


def read_payloads(reader, zip_records, records: set[str], kind: str, directory: str, config_file: str) -> dict:
    """``{fqn: tensor}`` of the archive's ``kind`` (``"weights"`` or ``"constants"``): parameters as
    ``nn.Parameter`` with their recorded ``requires_grad``, the rest plain tensors.

    ``reader``: the archive's ``_SafeReader`` (its name, size and budget checks, its ``weights_only``
    unpickling); ``zip_records``: its ``_ZipRecords``. ``LoadError`` for a damaged archive,
    ``Unsupported`` for what only torch's reader reads."""
    if f"{directory}model.pt" in records:
        raise Unsupported(f"the legacy {kind} file")
    if config_file not in records:
        raise LoadError(f"{reader.path}: the archive has no {kind} configuration ({config_file}).")
    try:
        raw = json.loads(zip_records.read_bytes(config_file))
        entries = raw["config"]
    except (ValueError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise LoadError(f"{reader.path}: the {kind} configuration is malformed ({type(exc).__name__}).") from None
    reader._check_keys(entries, kind)
    reader._check_payload_sizes(entries, directory, kind)
    storages: dict[str, torch.Tensor] = {}  # records several entries view
    out: dict[str, Any] = {}
    for fqn, meta in entries.items():
        if not isinstance(meta, dict) or not isinstance(meta.get("path_name"), str):
            raise LoadError(f"{reader.path}: the {kind} configuration of {shown(fqn)} is malformed.")
        name = meta["path_name"]
        if kind == "constants" and not name.startswith(TENSOR_CONSTANT_PREFIX):
            raise reader.refuse(f"constant {shown(fqn)} is a pickled Python object, not a tensor")
        if meta.get("use_pickle"):
            out[fqn] = reader.pickled_tensor(zip_records.read_bytes(f"{directory}{name}"), kind, fqn)
            continue
        tm = meta.get("tensor_meta")
        if not isinstance(tm, dict):
            raise LoadError(f"{reader.path}: {kind[:-1]} {shown(fqn)} has no tensor metadata.")
        dtype = _dtype(tm)
        if name not in storages:
            storages[name] = _record(reader, zip_records, f"{directory}{name}", dtype, tm)
        try:
            tensor = torch.as_strided(storages[name], size=_ints(tm.get("sizes")), stride=_ints(tm.get("strides")),
                                      storage_offset=_ints([tm.get("storage_offset", {"as_int": 0})])[0])
        except RuntimeError as exc:  # strides past the stored bytes
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            raise LoadError(f"{reader.path}: {kind[:-1]} {shown(fqn)} does not fit its stored bytes ({first}).") from None
        out[fqn] = torch.nn.Parameter(tensor, requires_grad=bool(tm.get("requires_grad"))) if meta.get("is_param") \
            else tensor
    return out


def _dtype(tm: dict) -> torch.dtype:
    """The recorded dtype, device and layout of a payload: a cpu strided tensor of a known dtype."""
    device = tm.get("device") or {}
    if device.get("type") != "cpu" or tm.get("layout", STRIDED) != STRIDED:
        raise Unsupported("a payload that is not a strided cpu tensor")
    return pt2_values.torch_value("as_scalar_type", tm.get("dtype"))


def _ints(entries: Any) -> list[int]:
    """The ints of a serialized sizes/strides list (``Unsupported`` for a symbolic one)."""
    out = []
    for entry in entries or []:
        value = entry.get("as_int") if isinstance(entry, dict) else None
        if type(value) is not int:
            raise Unsupported("a payload of symbolic size")
        out.append(value)
    return out


def _record(reader, zip_records, record: str, dtype: torch.dtype, tm: dict) -> torch.Tensor:
    """The flat tensor of one record's bytes (an empty record, which torch fills with zeros of the
    declared shape, is left to torch's reader): a view into the archive's bytes where the record is
    stored uncompressed and aligned (as torch writes them), else a copy of what ``zipfile`` reads."""
    found = zip_records.stored_span(record)
    length = found[1] if found else len(data := zip_records.read_bytes(record))
    if not length:
        raise Unsupported("an empty weight record")
    size = dtype.itemsize
    if length % size:
        raise LoadError(f"{reader.path}: record {shown(record)} holds {length:,} bytes, not a whole number of "
                        f"{str(dtype).removeprefix('torch.')} values.")
    if found and found[0] % size == 0:
        return torch.frombuffer(zip_records.whole(), dtype=dtype, count=length // size, offset=found[0])
    return torch.frombuffer(bytearray(zip_records.read_bytes(record)), dtype=dtype)
