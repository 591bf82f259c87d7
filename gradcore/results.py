"""How many results an op returns, read from its rule (``GET /v1/ops`` publishes the
rules; the engine's registration writes them): one reading for the engine and the client."""

from __future__ import annotations

from typing import Any


def evaluate_results(rule: dict[str, Any], bound: dict[str, Any]) -> tuple[int, bool]:
    """The one reading of a results rule (the client calls it on ``GET /v1/ops`` rules).
    ``bound`` maps parameter names to values; tensors are anything with a ``shape``
    that is not a list or tuple."""

    def is_tensor(v: Any) -> bool:
        return hasattr(v, "shape") and not isinstance(v, list | tuple)

    kind = rule.get("rule")
    if kind is None:
        n = int(rule.get("count", 1))
        return n, n != 1
    if kind == "given":
        value = bound.get(rule["arg"])
        if value is None or is_tensor(value):
            return 1, False
        return int(rule["count"]), True
    if kind == "flag":
        return (int(rule["count"]), True) if bound.get(rule["arg"]) else (1, False)
    if kind == "flag_ndim":
        return (max(len(bound["input"].shape), 1), True) if bound.get(rule["arg"]) else (1, False)
    if kind == "dims":  # one per dim listed in arg (every dim of input when None)
        dims = bound.get(rule["arg"])
        if dims is None:
            return len(bound["input"].shape), True
        return (len(dims), True) if isinstance(dims, list | tuple) else (1, True)
    if kind == "flags":  # one, and one more per true flag among the comma-separated args
        n = 1 + sum(bool(bound.get(a)) for a in rule["arg"].split(","))
        return n, n != 1
    if kind == "sections":
        cuts = bound[rule["arg"]]
        if is_tensor(cuts):
            return (int(cuts.shape[0]) + 1, True) if len(cuts.shape) else (int(cuts.item()), True)
        return (len(cuts) + 1, True) if isinstance(cuts, list | tuple) else (int(cuts), True)
    size = bound["input"].shape[int(bound.get(rule["dim"]) or 0)]
    if kind == "dim_size":
        return int(size), True
    first = bound[rule["arg"]]
    if isinstance(first, list | tuple):
        return len(first), True
    count = int(first)
    if kind == "split":
        return max(1, -(-size // count)), True
    if not size:  # chunk of an empty dim: as many empty chunks as asked (PyTorch)
        return count, True
    step = -(-size // count)
    return -(-size // step), True
