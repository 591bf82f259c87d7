"""Named examples of the bodies with several forms: the docs page offers one per form."""

from __future__ import annotations

from fastapi.openapi.models import Example

# Named examples of the bodies with several forms: the docs page offers one per form.
STEP_EXAMPLES: dict[str, Example] = {
    "op": {"summary": "y = x ** 2, as an op", "value": {"out": "y", "op": "pow", "args": ["x", 2]}},
    "expr": {"summary": "y = x ** 2, as an expression", "value": {"out": "y", "expr": "x ** 2"}},
    "kwargs": {
        "summary": "s = y.sum(dim=0)",
        "value": {"out": "s", "op": "sum", "args": ["y"], "kwargs": {"dim": 0}},
    },
    "assign": {
        "summary": "with no_grad: w -= 0.1 * w.grad",
        "value": {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True},
    },
    "several": {
        "summary": "vals, idx = x.max(dim=1)",
        "value": {"out": ["vals", "idx"], "expr": "x.max(dim=1)"},
    },
}


LEAF_EXAMPLES: dict[str, Example] = {
    "data": {
        "summary": "x = torch.tensor([1.0, 2.0], requires_grad=True)",
        "value": {"data": [1.0, 2.0], "requires_grad": True},
    },
    "float64": {
        "summary": "a float64 matrix",
        "value": {"data": [[1.0, 2.0], [3.0, 4.0]], "dtype": "float64", "requires_grad": True},
    },
    "b64": {
        "summary": "the same x as base64 bytes",
        "value": {"b64": "AACAPwAAAEA=", "dtype": "float32", "shape": [2], "requires_grad": True},
    },
}
