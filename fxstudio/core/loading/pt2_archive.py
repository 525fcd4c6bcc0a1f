"""Opening a ``torch.export`` archive (``.pt2``) without running anything it contains.

``torch.export.load`` trusts the archive: it unpickles weights and constants marked ``use_pickle``
with ``weights_only=False``, falls back to a full unpickle for sample inputs, unpickles opaque
constants with ``pickle.loads``, passes symbolic-shape strings to ``sympy.sympify`` (which
``eval``s them), ``exec``s the program's ``guards_code`` in ``ep.module()``, loads AOTInductor
shared libraries, and lets ``torch.fx`` write parameter paths into code. Without ``trust`` this
module reads the archive's JSON itself, checks every name and expression before torch sees it,
loads each pickled payload with ``weights_only=True`` (or refuses, naming ``--trust``), and only then
hands the checked pieces to torch's deserializer. With ``trust`` it is ``torch.export.load``.

Issue #23: what the archive declares is bounded too. Every expression and guard the whitelist lets
through must only build numbers of ``budgets.MAX_INT_DIGITS`` digits (``expr_bounds``: sympy and
exec'd guards compute exactly, ``9**9**9`` never returns); recorded shapes, symbol ranges and JSON
numbers must fit torch's int64 arithmetic; and what torch would make beyond the bytes the file
stores (zeros for an empty weight record, views repeating stored bytes, compressed records, a
pickled payload's own zip) is counted against the graph's ``DataBudget`` (``pt2_limits``).
"""

from __future__ import annotations

import ast
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import torch

from fxstudio.core import expr_bounds, fx_compat, fx_compat_export
from fxstudio.core.budgets import BudgetExceeded, DataBudget
from fxstudio.core.code_names import is_attribute_path, shown
from fxstudio.core import trust
from fxstudio.core.errors import LoadError
from fxstudio.core.op_namespaces import ensure_registered, namespace_of
from fxstudio.core.loading import pt2_limits

TRUST_HINT = "if you trust the file, open it with --trust"
MODEL_NAME = "model"  # the program torch.export.load returns

# JSON keys of the serialized program whose string values become names in a graph (and so code).
_NAME_KEYS = {"name", "as_name", "user_input_name"}
_PATH_KEYS = {"parameter_name", "buffer_name", "tensor_constant_name", "custom_obj_name"}
_NAME_MAP_KEYS = {"tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values", "custom_obj_values"}
_TARGET = re.compile(r"(?:#[A-Za-z0-9_.]+:)?[A-Za-z_][A-Za-z0-9_.]*\Z")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Callables a symbolic-shape expression may name (sympy's and torch.utils._sympy.functions').
_SYMPY_CALLS = {
    "Symbol", "Integer", "Float", "Rational", "Add", "Mul", "Pow", "Max", "Min", "Abs", "Mod", "Eq", "Ne",
    "Lt", "Le", "Gt", "Ge", "StrictLessThan", "StrictGreaterThan", "LessThan", "GreaterThan", "Equality",
    "Unequality", "And", "Or", "Not", "Xor", "ITE", "Piecewise", "floor", "ceiling", "sqrt", "Tuple",
    "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt", "FloorToInt", "CeilDiv",
    "LShift", "RShift", "PowByNatural", "FloatPow", "FloatTrueDiv", "IntTrueDiv",
    "IsNonOverlappingAndDenseIndicator", "TruncToFloat", "TruncToInt", "RoundToInt", "RoundDecimal",
    "ToFloat", "Identity", "BitwiseFn_bitwise_and", "BitwiseFn_bitwise_or", "OpaqueUnaryFn_sqrt",
    "OpaqueUnaryFn_exp", "OpaqueUnaryFn_log", "OpaqueUnaryFn_cos", "OpaqueUnaryFn_sin", "Sum",
}
# What input guards (exec'd by ep.module()) may call: tensor size queries and a few functions.
_GUARD_METHODS = {"size", "stride", "storage_offset", "dim", "numel"}
_GUARD_CALLS = {"IsNonOverlappingAndDenseIndicator", "cast_symbool_to_symint_guardless", "int", "float",
                "abs", "min", "max", "bool"}
_GUARD_MATH = {"floor", "ceil", "trunc", "sqrt", "log2", "log", "exp"}
_OPERATORS = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context)
_PYTREE_FAILURE = re.compile(r"in pytree is not registered|deserialize TreeSpec of namedtuple")


class UnsafeArchive(LoadError):
    """A ``.pt2`` archive that holds code or names that would become code (exit 2)."""


def load_archive(path: Path, *, trust: bool, on_checked=None, budget: DataBudget | None = None,
                 editable=None) -> tuple[Any, list[str]]:
    """(``ExportedProgram``, notes) of the archive at ``path``; ``LoadError`` for any bad archive.

    ``budget``: what the tensors the archive describes rather than stores (zeros for an empty weight
    record, views repeating stored bytes, compressed records) are counted against (``pt2_limits``).
    ``editable`` (without ``trust``): called with the checked program JSON, the weights and
    constants read as data and the stored example inputs (``pt2_weights.payloads_as_data``); what it returns
    (unless None) stands in for the ``ExportedProgram``, which torch then does not rebuild."""
    if not zipfile.is_zipfile(path):
        raise LoadError(
            f"{path}: not a torch.export archive (the file is not a zip archive; it may be truncated or "
            "not a .pt2 file). Save one with torch.export.save(torch.export.export(model, inputs), path)."
        )
    if trust:
        ep, notes = _torch_load(path)
        return ep, ["loaded with torch.export.load (--trust): the archive's code was allowed to run", *notes]
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise LoadError(f"{path}: cannot read the file ({exc.strerror}).") from None
    try:
        return _SafeReader(path, on_checked, budget).program(editable)
    except LoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - any other malformed part: one line, not a traceback
        raise LoadError(
            f"{path}: this archive is damaged or not a torch.export archive ({type(exc).__name__}: {_first_line(exc)})."
        ) from None


def _torch_load(path: Path):
    from fxstudio.core.loading.tracing import quiet_torch_logs  # torch logs a traceback, then raises

    try:
        with quiet_torch_logs():
            return torch.export.load(path), []
    except Exception as exc:  # noqa: BLE001 - corrupt archives raise many types
        first = exc
    # An output type such as a transformers ModelOutput registers itself when its module is
    # imported: import it under the untrusted reader's rules (pt2_types), then try once more.
    try:
        with zipfile.ZipFile(path) as zf:
            program = json.loads(zf.read(next(n for n in zf.namelist() if n.endswith("/models/model.json"))))
    except Exception:  # noqa: BLE001 - not readable: report torch's error
        program = None
    if program is not None:
        from fxstudio.core.loading.pt2_types import resolve_spec_types

        notes = resolve_spec_types(program, LoadError)
        if any("was imported" in note for note in notes):
            try:
                return torch.export.load(path), [n for n in notes if "was imported" in n]
            except Exception as exc:  # noqa: BLE001
                first = exc
        missing = [n for n in notes if "not importable here" in n]
        if missing:  # torch's own error only says "check the warnings above"
            first = NotImplementedError(f"{missing[0].split(' is not importable')[0]} in pytree is not registered")
    raise _unreadable(path, "torch.export.load could not read this archive", first, "truncated") from None


def _unreadable(path: Path, what: str, exc: BaseException, damage: str) -> LoadError:
    """The one-line ``LoadError`` for an archive torch failed on: what failed, torch's first line."""
    if _PYTREE_FAILURE.search(str(exc)):  # a type this process does not know, not a damaged file
        return LoadError(f"{path}: {what} ({type(exc).__name__}: {_first_line(exc)}). The program's inputs or "
                         "outputs use a Python type that is not registered with torch's pytree here: install "
                         "the package that defines it (and registers it), or open the file without --trust (fxstudio then "
                         "rebuilds that structure as a dict or tuple).")
    return LoadError(f"{path}: {what} ({type(exc).__name__}: {_first_line(exc)}). "
                     f"It may be {damage}, or saved by an incompatible torch version.")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else ""


class _SafeReader:
    """One untrusted archive, read piece by piece (see the module docstring)."""

    def __init__(self, path: Path, on_checked=None, budget: DataBudget | None = None):
        self.path = path
        self._data: bytes | None = None
        self.notes: list[str] = []
        self.on_checked = on_checked  # called with the program's JSON once checked (pt2_structure)
        self.budget = budget if budget is not None else DataBudget(str(path))
        self.record_sizes: dict[str, int] = {}  # declared (unpacked) bytes of each record
        self.namespaces: set[str] = set()  # operator namespaces the nodes call (torch.ops.<ns>.…)

    @property
    def data(self) -> bytes:
        """The whole archive, read once torch's reader needs it (the weights): the program's JSON
        is read and checked, and its structure drawn, without reading a large archive (issue #15).
        What torch rebuilds is the JSON checked here, whatever the file holds by then."""
        if self._data is None:
            try:
                self._data = self.path.read_bytes()
            except OSError as exc:
                raise LoadError(f"{self.path}: cannot read the file ({exc.strerror}).") from None
        return self._data

    def take(self, nbytes: int, item: str) -> None:
        """Count ``nbytes`` that the archive describes rather than stores; ``LoadError`` past the budget."""
        if nbytes > 0:
            try:
                self.budget.take(nbytes, item)
            except BudgetExceeded as exc:
                raise LoadError(exc.message) from None

    def refuse(self, what: str) -> UnsafeArchive:
        """The error for an archive part that only a trusted load may read (``needs_trust``)."""
        error = UnsafeArchive(f"{self.path}: {what}; fxstudio does not run code from an archive ({TRUST_HINT}).")
        error.needs_trust = True
        return error

    def program(self, editable=None):
        """The checked ``ExportedProgram`` (or what ``editable`` made of its parts) and the notes."""
        model_json, records = self.checked_program()
        if editable is not None:
            from fxstudio.core.loading.pt2_weights import Unsupported, payloads_as_data

            used = self.budget.used
            try:
                state_dict, constants, sample = payloads_as_data(self, records)
                made = editable(model_json, (state_dict, constants), sample)
            except Unsupported:
                made = None
            except LoadError as exc:
                if str(exc).startswith(str(self.path)):
                    raise
                raise LoadError(f"{self.path}: {exc}") from None
            if made is not None:
                return made, self.notes
            self.budget.used = used  # torch's reader counts the same records again
        return self.rebuild(model_json, records), self.notes

    def checked_program(self) -> tuple[dict, set[str]]:
        """The program's JSON, checked (names, expressions, guards, sizes; ``on_checked`` called,
        pytree types resolved), and the archive's record names."""
        C = fx_compat_export.archive_constants()

        records = self._record_names()
        if C.ARCHIVE_FORMAT_PATH not in records:
            raise self.refuse("this archive is in torch's pre-2.7 .pt2 format, which torch reads by unpickling it "
                              "(that can run code)")
        # The version and the program's JSON are read with zipfile: torch's archive reader imports its
        # whole deserializer (seconds), which the structure shown first does not need (issue #15).
        model_file = C.MODELS_FILENAME_FORMAT.format(MODEL_NAME)
        with _ZipRecords(self.path) as reader:
            version = reader.read_string(C.ARCHIVE_VERSION_PATH)
            if version != C.ARCHIVE_VERSION_VALUE:
                raise LoadError(f"{self.path}: this archive was saved by an incompatible torch version "
                                f"(archive version {shown(version)}).")
            if model_file not in records:
                raise LoadError(f"{self.path}: the archive holds no exported program named '{MODEL_NAME}'.")
            model_bytes = reader.read_bytes(model_file)
        if any(r.startswith(C.AOTINDUCTOR_DIR) for r in records):
            self.notes.append("the archive's AOTInductor compiled code was not loaded (it is code, not data)")
        try:
            model_json = json.loads(model_bytes)
        except (ValueError, UnicodeDecodeError) as exc:
            raise LoadError(f"{self.path}: {model_file} is not valid JSON ({exc}).") from None
        self._check_program(model_json)
        if self.on_checked is not None:
            self.on_checked(model_json)
        from fxstudio.core.loading.pt2_types import resolve_spec_types  # ModelOutput and other output types

        self.notes.extend(resolve_spec_types(model_json, self.refuse))
        return model_json, records

    def rebuild(self, model_json: dict, records: set[str]):
        """torch's ``ExportedProgram`` of the checked ``model_json``, its weights read by torch's reader."""
        C = fx_compat_export.archive_constants()
        reader = self._reader()
        state_dict = self._payloads(reader, records, "weights", C.WEIGHTS_DIR, C.WEIGHTS_CONFIG_FILENAME_FORMAT)
        constants = self._payloads(reader, records, "constants", C.CONSTANTS_DIR, C.CONSTANTS_CONFIG_FILENAME_FORMAT)
        inputs_file = C.SAMPLE_INPUTS_FILENAME_FORMAT.format(MODEL_NAME)
        sample = self._sample_inputs(reader.read_bytes(inputs_file) if inputs_file in records else b"")
        return self._deserialize(model_json, state_dict, constants, sample)

    # -- the container ---------------------------------------------------------------------------

    def _record_names(self) -> set[str]:
        """Record names as torch's reader sees them (without the archive's top-level folder)."""
        try:
            with zipfile.ZipFile(self.path) as zf:
                infos = zf.infolist()
            size = self.path.stat().st_size
        except (zipfile.BadZipFile, ValueError, OSError) as exc:
            raise LoadError(f"{self.path}: not a readable zip archive ({exc}).") from None
        names = [i.filename for i in infos]
        unpacked = sum(i.file_size for i in infos)
        bomb = pt2_limits.unpacked_problem(unpacked, size)  # torch stores records uncompressed
        if bomb:
            raise LoadError(f"{self.path}: the archive {bomb}.")
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) != 1 or any("/" not in n for n in names):
            raise LoadError(f"{self.path}: not a torch.export archive (its files do not sit in one top folder).")
        self.take(unpacked - size, "the archive's compressed records (unpacked beyond the file's size)")
        for info in infos:
            name = info.filename.split("/", 1)[1]
            self.record_sizes[name] = self.record_sizes.get(name, 0) + info.file_size
        return set(self.record_sizes)

    def _reader(self):
        try:
            return fx_compat.pt2_archive_reader(io.BytesIO(self.data))
        except Exception as exc:  # noqa: BLE001 - torch's zip reader raises RuntimeError/AssertionError
            raise LoadError(f"{self.path}: torch cannot read this archive ({type(exc).__name__}: {_first_line(exc)}).") from None

    # -- the program's JSON ----------------------------------------------------------------------

    def _check_program(self, program: Any) -> None:
        """Refuse names that are not identifier paths, expressions outside the sympy subset, unsafe guards."""
        if not isinstance(program, dict):
            raise LoadError(f"{self.path}: the program is not a JSON object.")
        self._walk(program, "program")
        guards = program.get("guards_code") or []
        if not isinstance(guards, list):
            raise LoadError(f"{self.path}: guards_code is not a list.")
        for guard in guards:
            if isinstance(guard, str):
                self._check_length(guard, "the input guard")
            if not isinstance(guard, str) or not _safe_guard(guard):
                raise self.refuse(f"the input guard {shown(guard)} is not a plain size check (torch would exec it)")
            self._check_bounded(guard, "guard", "the input guard")
        ranges = pt2_limits.range_problem(program.get("range_constraints"))
        if ranges:
            raise LoadError(f"{self.path}: {ranges}; refusing the archive.")

    def _check_length(self, text: str, what: str) -> None:
        """Refuse an expression too long to parse quickly (before the whitelist parses it)."""
        if len(text) > expr_bounds.MAX_TEXT:
            self._refuse_expression(text, what, f"is {len(text):,} characters long (more than {expr_bounds.MAX_TEXT:,})")

    def _check_bounded(self, text: str, dialect: str, what: str) -> None:
        """Refuse an expression whose numbers could grow past what computes quickly (``expr_bounds``)."""
        problem = expr_bounds.expression_problem(text, dialect)
        if problem:
            self._refuse_expression(text, what, problem)

    def _refuse_expression(self, text: str, what: str, problem: str) -> None:
        raise UnsafeArchive(f"{self.path}: {what} {shown(text)} {problem}; refusing an expression "
                            "that might never finish computing.")

    def _walk(self, value: Any, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in _NAME_KEYS and isinstance(item, str) and item:  # "" occurs (unnamed HOP outputs)
                    self._check_name(item, key)
                elif key in _NAME_MAP_KEYS and isinstance(item, dict):
                    for name in item:
                        self._check_name(name, key)
                    if key == "tensor_values":
                        for name, meta in item.items():
                            self._check_tensor(meta, f"the tensor {shown(name)}")
                elif key == "fqn" and isinstance(item, str) and item:
                    self._check_path(item, "submodule path")
                elif key == "forward_arg_names" and isinstance(item, list):
                    for name in item:
                        self._check_name(name, "forward argument")
                elif key == "target" and isinstance(item, str) and not _TARGET.match(item):
                    raise self.refuse(f"node target {shown(item)} is not an operator name")
                elif key == "target" and isinstance(item, str) and not trust.serialized_op_allowed(item):
                    raise self.refuse(f"node target {shown(item)} reads or writes files (refused as data)")
                elif key == "target" and isinstance(item, str):
                    namespace = namespace_of(item)
                    if namespace is not None:
                        self.namespaces.add(namespace)
                elif key == "expr_str" and isinstance(item, str):
                    self._check_length(item, "the shape expression")
                    if not _safe_sympy(item):
                        raise self.refuse(f"the shape expression {shown(item)} is not a plain sympy expression "
                                          "(torch would eval it)")
                    self._check_bounded(item, "sympy", "the shape expression")
                elif type(item) is int and abs(item) > pt2_limits.MAX_JSON_INT:
                    self._check_number(item, key)
                elif key in _PATH_KEYS and isinstance(item, str):
                    self._check_path(item, key.replace("_", " "))
                if key not in ("metadata", "stack_trace") and isinstance(item, (dict, list)):
                    self._walk(item, key)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, (dict, list)):
                    self._walk(item, where)
                elif type(item) is int and abs(item) > pt2_limits.MAX_JSON_INT:
                    self._check_number(item, where)

    def _check_number(self, value: int, key: str) -> None:
        raise LoadError(f"{self.path}: the program {pt2_limits.number_problem(value)} (under {shown(key)}); "
                        "refusing the archive.")

    def _check_tensor(self, meta: Any, what: str) -> None:
        """Refuse a recorded tensor whose sizes or strides torch could not compute with (overflow)."""
        problem = pt2_limits.tensor_meta_problem(meta)
        if problem:
            raise LoadError(f"{self.path}: {what} is recorded with sizes no tensor can have: {problem}; "
                            "refusing the archive.")

    def _check_name(self, name: Any, what: str) -> None:
        if not isinstance(name, str) or not _IDENT.match(name):
            raise UnsafeArchive(f"{self.path}: {what.replace('_', ' ')} {shown(name)} in the archive is not a Python "
                                "identifier; refusing a name that would become code.")

    def _check_path(self, name: Any, what: str) -> None:
        if not is_attribute_path(name, keywords=True):
            raise UnsafeArchive(f"{self.path}: {what} {shown(name)} in the archive is not an attribute path "
                                "(identifiers joined by dots); refusing a name that would become code.")

    # -- weights, constants, sample inputs --------------------------------------------------------

    def _payloads(self, reader, records: set[str], kind: str, directory: str, config_format: str) -> dict:
        """Weights or constants by name: raw tensors as torch reads them, pickled ones with weights_only=True."""
        from torch.export.pt2_archive import constants as C
        _build_file_map, _ = fx_compat.pt2_payload_helpers()
        deserialize_size, deserialize_storage_offset, deserialize_stride = fx_compat.tensor_layout_deserializers()

        legacy = f"{directory}{MODEL_NAME}.pt"
        if legacy in records:
            found = self._safe_unpickle(reader.read_bytes(legacy), f"the {kind} file {legacy}")
            if not isinstance(found, dict):
                raise LoadError(f"{self.path}: the {kind} file {legacy} does not hold a dict of tensors.")
            self._check_keys(found, kind)
            self.take(pt2_limits.excess_bytes(found), f"the {kind} file {legacy} (views repeating their stored bytes)")
            return found
        config_file = config_format.format(MODEL_NAME)
        if config_file not in records:
            raise LoadError(f"{self.path}: the archive has no {kind} configuration ({config_file}).")
        try:
            raw_config = json.loads(reader.read_bytes(config_file))
            config = fx_compat_export.payload_config(raw_config)
        except Exception as exc:  # noqa: BLE001 - malformed JSON or schema
            raise LoadError(f"{self.path}: the {kind} configuration is malformed ({type(exc).__name__}: {_first_line(exc)}).") from None
        self._check_keys(raw_config.get("config", {}), kind)
        self._check_payload_sizes(raw_config.get("config", {}), directory, kind)
        plain = type(config)(config={k: m for k, m in config.config.items() if not m.use_pickle})
        try:
            files = _build_file_map(reader, plain, directory)
        except Exception as exc:  # noqa: BLE001 - sizes that do not match their records, missing records
            raise LoadError(f"{self.path}: the archive's {kind} are damaged ({type(exc).__name__}: {_first_line(exc)}).") from None
        out: dict[str, Any] = {}
        for fqn, meta in config.config.items():
            name = meta.path_name
            if kind == "constants" and not name.startswith(C.TENSOR_CONSTANT_FILENAME_PREFIX):
                raise self.refuse(f"constant {shown(fqn)} is a pickled Python object, not a tensor")
            if meta.use_pickle:
                out[fqn] = self.pickled_tensor(reader.read_bytes(f"{directory}{name}"), kind, fqn)
                continue
            if meta.tensor_meta is None:
                raise LoadError(f"{self.path}: {kind[:-1]} {shown(fqn)} has no tensor metadata.")
            tm = meta.tensor_meta
            try:
                tensor = torch.as_strided(files[name], size=deserialize_size(tm.sizes), stride=deserialize_stride(tm.strides),
                                          storage_offset=deserialize_storage_offset(tm.storage_offset))
            except Exception as exc:  # noqa: BLE001 - strides past the stored bytes
                raise LoadError(f"{self.path}: {kind[:-1]} {shown(fqn)} does not fit its stored bytes ({_first_line(exc)}).") from None
            out[fqn] = torch.nn.Parameter(tensor, requires_grad=tm.requires_grad) if meta.is_param else tensor
        return out

    def pickled_tensor(self, data: bytes, kind: str, fqn: str) -> torch.Tensor:
        """A weight or constant pickled in the archive, read with ``weights_only=True``: a tensor,
        its bytes beyond its storage counted against the budget (``LoadError`` otherwise)."""
        what = f"the pickled {kind[:-1]} {shown(fqn)}"
        value = self._safe_unpickle(data, what)
        if not isinstance(value, torch.Tensor):
            raise LoadError(f"{self.path}: {what} is a {type(value).__name__}, not a tensor.")
        self.take(pt2_limits.excess_bytes(value), f"{what} (a view repeating its stored bytes)")
        return value

    def _check_payload_sizes(self, entries: dict, directory: str, kind: str) -> None:
        """Refuse declared shapes no tensor can have; count what torch makes beyond the stored bytes
        (zeros of the declared shape for an empty record, a view repeating the bytes it has)."""
        for fqn, meta in entries.items():
            if not isinstance(meta, dict) or meta.get("use_pickle"):
                continue
            tensor_meta = meta.get("tensor_meta")
            self._check_tensor(tensor_meta, f"the {kind[:-1]} {shown(fqn)}")
            stored = self.record_sizes.get(f"{directory}{meta.get('path_name')}", 0)
            self.take(pt2_limits.payload_excess(tensor_meta, stored),
                      f"the {kind[:-1]} {shown(fqn)} ({stored:,} bytes stored, made at its declared shape)")

    def _check_keys(self, mapping: Any, kind: str) -> None:
        if not isinstance(mapping, dict):
            raise LoadError(f"{self.path}: the {kind} configuration is not a JSON object.")
        for key in mapping:
            self._check_path(key, f"{kind[:-1]} name")

    def _sample_inputs(self, data: bytes):
        """The program's stored example inputs, read with weights_only=True (None when there are none)."""
        if not data:
            return None
        found = self._safe_unpickle(data, "the stored example inputs")
        if not isinstance(found, tuple):
            raise LoadError(f"{self.path}: the stored example inputs are a {type(found).__name__}, not a tuple.")
        self.take(pt2_limits.excess_bytes(found), "the stored example inputs (views repeating their stored bytes)")
        return found

    def _safe_unpickle(self, data: bytes, what: str):
        problem, unpacked = pt2_limits.payload_problem(data)
        if problem == pt2_limits.LEGACY_FORMAT:  # torch.export.load would unpickle it in full
            raise self.refuse(f"{what} {problem}, which fxstudio does not read as data")
        if problem:
            raise LoadError(f"{self.path}: {what} {problem}.")
        self.take(unpacked, f"{what} (compressed records unpacked beyond their stored size)")
        try:
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - UnpicklingError for disallowed globals, others for damage
            if isinstance(exc, __import__("pickle").UnpicklingError):
                raise self.refuse(f"{what} needs a full unpickle (weights_only=True will not rebuild its Python objects)") from None
            raise LoadError(f"{self.path}: {what} cannot be read ({type(exc).__name__}: {_first_line(exc)}).") from None

    def _deserialize(self, model_json: Any, state_dict: dict, constants: dict, sample):
        for namespace in sorted(self.namespaces):
            ensure_registered(namespace)  # torch's own modules only (op_namespaces.TORCH_REGISTRARS)
        try:
            return fx_compat.deserialize_program(model_json, state_dict, constants, sample)
        except Exception as exc:  # noqa: BLE001 - a damaged or incompatible program
            raise _unreadable(self.path, "torch could not rebuild the exported program", exc, "damaged") from None


class _ZipRecords:
    """An archive's records by name under its one top folder (``_record_names`` checked it), read
    with ``zipfile``: what ``PT2ArchiveReader.read_bytes``/``read_string`` return."""

    def __init__(self, path: Path):
        self.zip = zipfile.ZipFile(path)  # reads the records it is asked for, not the whole file
        self.top = self.zip.namelist()[0].split("/", 1)[0]

    def __enter__(self) -> "_ZipRecords":
        return self

    def __exit__(self, *exc) -> None:
        self.zip.close()

    def read_bytes(self, name: str) -> bytes:
        """The bytes of record ``name``."""
        try:
            return self.zip.read(f"{self.top}/{name}")
        except KeyError:
            raise LoadError(f"the archive has no record {shown(name)}.") from None

    def read_string(self, name: str) -> str:
        """Record ``name`` as UTF-8 text."""
        return self.read_bytes(name).decode("utf-8")


def _expression(text: str) -> ast.Expression | None:
    """``text`` parsed as one Python expression (never evaluated), or None when it is not one."""
    try:
        return ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _safe_sympy(text: str) -> bool:
    """Whether ``text`` is a sympy expression of numbers, symbol names and known functions only."""
    tree = _expression(text)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _SYMPY_CALLS:
                return False
        elif isinstance(node, ast.Name):
            if node.id.startswith("_"):
                return False
        elif isinstance(node, ast.keyword):
            if node.arg is None or not isinstance(node.value, ast.Constant):
                return False
        elif isinstance(node, ast.Constant):
            if not _plain_constant(node.value):
                return False
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp) + _OPERATORS):
            return False
    return True


def _safe_guard(text: str) -> bool:
    """Whether an input guard only compares sizes of ``L['input']`` tensors (it is exec'd by torch)."""
    tree = _expression(text)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            ok = (isinstance(func, ast.Name) and func.id in _GUARD_CALLS) or (
                isinstance(func, ast.Attribute) and (
                    func.attr in _GUARD_METHODS
                    or (func.attr in _GUARD_MATH and isinstance(func.value, ast.Name) and func.value.id == "math")
                )
            )
            if not ok or node.keywords:
                return False
        elif isinstance(node, ast.Attribute):
            if node.attr not in _GUARD_METHODS | _GUARD_MATH:
                return False
        elif isinstance(node, ast.Name):
            if node.id not in _GUARD_CALLS | {"L", "math"}:
                return False
        elif isinstance(node, ast.Constant):
            if not _plain_constant(node.value):
                return False
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Subscript) + _OPERATORS):
            return False
    return True


def _plain_constant(value: Any) -> bool:
    """Numbers, booleans, None, and strings that are identifiers (symbol and input names)."""
    if isinstance(value, str):
        return bool(_IDENT.match(value))
    return value is None or isinstance(value, (bool, int, float))
