"""Tangent propagation through one op call (forward-mode AD's inner loop).

``Function.apply`` hands a call whose inputs carry a tangent at the open level
here. The op runs once, recorded on a node that serves as the rule's context
(``ctx``: what its forward saved, its results, and ``ctx.inputs``) whether or not
the reverse graph wants it: an input with a tangent counts as needing a gradient
while the forward and the rule run, so the forward saves what a rule derived
from the backward rule reads. Then the op's declared rule (``Function.jvp``, see
``engine.dual``) computes the output's tangent, with the level suspended (a rule
computes with primals) and grad mode as the caller has it, so the tangent is
differentiable in reverse mode when its primal or tangent requires grad.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dual
from .dual import FROM_BACKWARD, LINEAR, LIVE, MULTILINEAR, REDUCTION, SELF_ADJOINT, Level
from .errors import BadArgumentsError, InternalVJPError
from .function import Function, Node
from .primitives import ViewBackward0, cast, conj, expand, real_part, sum_to
from .tensor import Tensor

# an edge placeholder: the input has a tangent (needs_input_grad reads True) but no
# reverse-mode edge; replaced by None once the rule has run
_PENDING = (None, -1)

NOT_SUPPORTED_MESSAGE = "Trying to use forward AD with {name} that does not support it."


def _edge(t: Any, has_tangent: bool) -> Any:
    if type(t) is Tensor:
        fn = t.grad_fn
        if fn is not None:
            return (fn, t._output_nr)
        if t.requires_grad_flag:
            return (t, 0)
    return _PENDING if has_tangent else None


_NUMBERS = (int, float, np.number)


def _zeros(t: Tensor) -> Tensor:
    return Tensor._make(np.zeros(t._data.shape, t._data.dtype))


def _is_float(t: Any) -> bool:
    return type(t) is Tensor and t._data.dtype.kind in "fc"


def propagate(
    cls: type[Function], inputs: tuple[Any, ...], params: dict[str, Any], level: Level
) -> Any:
    """Run ``cls`` on ``inputs`` and give its float results their tangents."""
    rule = cls.jvp
    if rule is None:
        raise BadArgumentsError(NOT_SUPPORTED_MESSAGE.format(name=cls.name.split("Backward")[0]))
    tangents = tuple(dual.tangent(t, level) for t in inputs)
    with dual.suspended():
        edges = tuple(_edge(t, tan is not None) for t, tan in zip(inputs, tangents))
        node: Any = cls._node_type(cls)  # after the edges (a stale view's node comes first)
        node.next_edges = edges
        out = cls._record(inputs, params, node)
        results = out if type(out) is tuple else (out,)
        node.inputs = inputs
        try:
            made = _run(cls, rule, node, inputs, tangents, params, results)
        finally:
            del node.inputs
            settle(node)
        if all(e is None for e in node.next_edges):  # a context only, not a graph node
            for r in results:
                if r._grad_fn is node:
                    r._grad_fn = None
                    r.requires_grad_flag = False
    made = made if type(made) is tuple else (made,)
    for r, tan in zip(results, made):
        if tan is not None and r._data.dtype.kind in "fc":
            dual.set_tangent(r, level, _fit(cls, tan, r))
    return out


def _fit(cls: type[Function], tan: Tensor, r: Tensor) -> Tensor:
    """A tangent in its primal's dtype and shape (a rule may leave a broadcast to do)."""
    if tan._data.dtype != r._data.dtype:
        tan = cast(tan, r._data.dtype)
    if tan._data.shape != r._data.shape:
        try:
            np.broadcast_shapes(tan._data.shape, r._data.shape)
        except ValueError:
            raise InternalVJPError(
                f"forward rule of {cls.name} made a tangent of shape {list(tan.shape)} for "
                f"a result of shape {list(r.shape)}"
            ) from None
        tan = expand(tan, r._data.shape)
    return tan


def _run(
    cls: type[Function],
    rule: Any,
    node: Node,
    inputs: tuple[Any, ...],
    tangents: tuple[Tensor | None, ...],
    params: dict[str, Any],
    results: tuple[Tensor, ...],
) -> Any:
    if rule is LINEAR:
        # a float tensor without a tangent contributes zeros, and so does a number (a
        # constant: ``x + 2`` is affine); index and mask tensors pass as they are
        args = [
            (tan if tan is not None else _zeros(t))
            if _is_float(t)
            else (0 if isinstance(t, _NUMBERS) else t)
            for t, tan in zip(inputs, tangents)
        ]
        return cls.apply(*args, **{**params, **cls.jvp_params})
    if rule is MULTILINEAR:
        return _multilinear(cls, inputs, tangents, params)
    if rule is REDUCTION:
        return _reduction(cls, node, tangents, results[0])
    if rule is SELF_ADJOINT:
        return _self_adjoint(cls, node, tangents, results[0])
    if rule is FROM_BACKWARD:
        return dual.FALLBACK[0](cls, node, inputs, tangents, results)
    return rule(node, *tangents)


def _multilinear(
    cls: type[Function],
    inputs: tuple[Any, ...],
    tangents: tuple[Tensor | None, ...],
    params: dict[str, Any],
) -> Tensor | None:
    """``f(x_1, ..., x_n) + b``: ``sum_i f(.., t_i, ..)`` (the bias zeroed in each term),
    plus ``f(0, .., t_b)`` for the bias's tangent (the op itself broadcasts it)."""
    bias = cls.jvp_bias
    total: Tensor | None = None
    for i, tan in enumerate(tangents):
        if tan is None:
            continue
        args = list(inputs)
        if i == bias:
            args[0] = _zeros(args[0])
        elif bias is not None and bias < len(args):
            args[bias] = _zeros(args[bias])
        args[i] = tan
        part = cls.apply(*args, **params)
        total = part if total is None else total + part
    return total


def _reduction(
    cls: type[Function], node: Any, tangents: tuple[Tensor | None, ...], out: Tensor
) -> Tensor | None:
    """``out_j = f(x[slice_j])``: ``J t = sum over slice_j of (J^T 1) * t``."""
    tan = tangents[0]
    if tan is None:
        return None
    grads = cls.backward(node, Tensor._make(np.ones(out._data.shape, out._data.dtype)))
    row = grads[0] if type(grads) is tuple else grads
    dims = getattr(node, "dims", None)
    prod = row * tan
    if dims is None:
        return prod.sum()
    return prod.sum(dims, bool(getattr(node, "keepdim", False)))


def _self_adjoint(
    cls: type[Function], node: Node, tangents: tuple[Tensor | None, ...], out: Tensor
) -> Tensor | None:
    """Each input's Jacobian is diagonal (elementwise, broadcast): J t = J^T t, the
    backward rule applied to the tangent broadcast to the result. For complex values
    (a holomorphic op, f'(z) per element) the backward multiplies by conj(f'(z)), so
    J t = conj(backward(conj(t))); non-holomorphic ops (abs, sgn) declare their own."""
    total: Tensor | None = None
    for i, tan in enumerate(tangents):
        if tan is None:
            continue
        g = expand(cast(tan, out._data.dtype), out._data.shape)
        grads = cls.backward(node, conj(g))
        part = grads[i] if type(grads) is tuple else grads
        if part is None:
            continue
        part = conj(part)
        total = part if total is None else total + part
    return total


def through(body: Any, inputs: tuple[Any, ...], tangents: tuple[Tensor | None, ...]) -> Any:
    """The tangent of ``body(*inputs)`` found by running the body in a level of its own,
    each op it calls propagating by its own rule: a composite's forward rule is the
    chain rule through its body."""
    level = dual.Level(-1)
    xs = list(inputs)
    for i, (t, tan) in enumerate(zip(inputs, tangents)):
        if tan is not None:
            xs[i] = ViewBackward0.apply(t, shape=t._data.shape)  # an alias to carry it
            dual.set_tangent(xs[i], level, tan)
    token = dual.set_current(level)
    LIVE[0] += 1
    try:
        out = body(*xs)
    finally:
        LIVE[0] -= 1
        dual.reset_current(token)
    made: Any = (
        tuple(dual.tangent(o, level) for o in out)
        if type(out) is tuple
        else dual.tangent(out, level)
    )
    level.close()
    return made


def settle(node: Node) -> None:
    """Give the context node its reverse-mode edges only (a rule that runs the backward
    engine through the node calls this first)."""
    node.next_edges = tuple(None if e is _PENDING else e for e in node.next_edges)


def sum_against(grads: Any, tangents: tuple[Tensor | None, ...]) -> Tensor | None:
    """``sum_i <grads_i, tangents_i>`` (each gradient summed to its tangent's shape
    first: a broadcasting op's backward rule leaves that to the backward loop)."""
    grads = grads if type(grads) is tuple else (grads,)
    total: Tensor | None = None
    for g, tan in zip(grads, tangents):
        if g is None or tan is None:
            continue
        # the real inner product re(conj(g) t): the same as g t for real tensors
        part = real_part(conj(sum_to(g, tan._data.shape)) * cast(tan, g._data.dtype)).sum()
        total = part if total is None else total + part
    return total


dual.PROPAGATE.append(propagate)
