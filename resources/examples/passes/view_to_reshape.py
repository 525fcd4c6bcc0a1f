"""A ``torch.fx.Transformer`` pass: every ``x.view(...)`` becomes ``x.reshape(...)`` (the Transformer
example of the torch.fx documentation). Try it on ``view_reshape.py``:
``{"op": "run_pass", "file": "passes/view_to_reshape.py", "name": "ViewToReshape"}``."""

import torch.fx


class ViewToReshape(torch.fx.Transformer):
    """Re-emits the graph, calling ``reshape`` wherever the original called ``view``."""

    def call_method(self, target, args, kwargs):
        if target == "view":
            target = "reshape"
        return super().call_method(target, args, kwargs)
