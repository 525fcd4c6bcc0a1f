"""Passes (issue #14): running the user's torch.fx passes, pattern rewrites and the built-in passes
on a copy of the edited module. The edit ops ``run_pass`` and ``replace_pattern``
(``fxstudio.core.edits``) apply the result as one undoable edit. Everything but this face is
private to the package (docs/notes/passes.md).
"""

from __future__ import annotations

from fxstudio.core.passes.analysis import ANALYSIS_KEY, OWN_KEYS, counts_text, summary, written_keys
from fxstudio.core.passes.builtins import BUILTIN_PASSES, BUILTIN_PREFIX, builtin_pass
from fxstudio.core.passes.files import LoadedPass, PassInfo, file_sha256, load_pass, pass_names
from fxstudio.core.passes.matching import match_nodes, same_call
from fxstudio.core.passes.policy import DEFAULT_PASS_TRUST, PassTrust, trust_all
from fxstudio.core.passes.calling import (EXAMPLE_INPUTS, PassInputs, kwargs_problem, parse_pass_kwargs,
                                         split_pass_arguments)
from fxstudio.core.passes.runner import PassRun, root_tensor_attrs, run_pass, run_pass_object, working_copy
from fxstudio.core.passes.trial import RUN_META_KEY, ran_shape

__all__ = [
    "ANALYSIS_KEY", "EXAMPLE_INPUTS", "OWN_KEYS", "PassInputs", "PassRun", "RUN_META_KEY", "counts_text",
    "kwargs_problem", "parse_pass_kwargs", "ran_shape", "run_pass", "split_pass_arguments", "summary", "written_keys",
    "BUILTIN_PASSES", "BUILTIN_PREFIX", "DEFAULT_PASS_TRUST", "LoadedPass", "PassInfo", "PassTrust", "builtin_pass",
    "file_sha256", "load_pass", "match_nodes", "pass_names", "root_tensor_attrs", "run_pass_object", "same_call",
    "trust_all", "working_copy",
]
