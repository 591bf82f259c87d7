"""``torch.autograd.functional``: jacobian, hessian, vjp and jvp of a function.

Same return structures as PyTorch: a Tensor where ``inputs`` (and the
function's output) is a Tensor, a tuple where it is a tuple, a tuple of tuples
for a Jacobian of several outputs w.r.t. several inputs. Results are detached
unless ``create_graph=True``, and ``strict=True`` refuses outputs that do not
depend on an input. The engine has reverse mode only, so ``jvp`` uses the
double-backward trick (its ops' VJPs must be differentiable, which they are:
they are written with engine ops); ``jacobian(strategy="forward-mode")`` pushes one
basis tangent per input element through ``forward_ad``. ``vectorize=True`` is
accepted and computes what the loop computes (one pass per row or column).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import forward_ad
from .autograd import grad as autograd_grad
from .errors import (
    ArgumentTypeError,
    BadArgumentsError,
    NoGradFnError,
    NotScalarError,
    ShapeMismatchError,
    UnusedInputError,
)
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from .primitives import reshape
from .registry import OPS
from .tensor import Tensor


class NotSupportedTogetherError(BadArgumentsError, NotImplementedError):
    """Arguments PyTorch does not implement together (its NotImplementedError)."""


def _size(shape: tuple[int, ...]) -> str:
    return f"torch.Size([{', '.join(map(str, shape))}])"


def _as_tuple(x: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple[Tensor, ...]]:
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise ArgumentTypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but {where} has type {type(el)}."
            )
    return is_tuple, items


def _postprocess(res: Any, unpack: tuple[bool, bool] | bool) -> Any:
    """Undo the tupling: ``unpack`` says which levels were tuples in the caller's call."""
    if isinstance(unpack, tuple):
        outer, inner = unpack
        if not inner:
            res = tuple(el[0] for el in res)
        if not outer:
            res = res[0]
        return res
    return res if unpack else res[0]


def _view_as(t: Tensor) -> Tensor:
    """``t.view_as(t)``: a differentiable alias, so results connect back to ``t``."""
    return reshape(t, t.shape)


def _preprocess(
    inputs: tuple[Tensor, ...], create_graph: bool, need_graph: bool
) -> tuple[Tensor, ...]:
    return tuple(
        _view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
        for t in inputs
    )


def _detach_all(x: Any, create_graph: bool) -> Any:
    if create_graph:
        return x
    if isinstance(x, Tensor):
        return x.detach()
    return tuple(_detach_all(el, create_graph) for el in x)


def _validate_v(v: tuple[Tensor, ...], other: tuple[Tensor, ...], other_is_tuple: bool) -> None:
    if len(other) != len(v):
        if other_is_tuple:
            raise BadArgumentsError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise BadArgumentsError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prefix = f"Entry {idx} in " if other_is_tuple else ""
            raise ShapeMismatchError(
                f"{prefix}v has invalid size: should be {_size(el_other.shape)} but got "
                f"{_size(el_v.shape)}."
            )


def _check_requires_grad(items: tuple[Any, ...], kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(items):
        if t is None:
            raise UnusedInputError(
                f"The output of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode."
            )
        if t.requires_grad:
            continue
        if kind == "hessian":
            msg = (
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."
            )
        elif kind == "jacobian":
            msg = (
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example)."
            )
        elif kind == "grad_inputs":
            msg = (
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode."
            )
        else:
            msg = (
                f"Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."
            )
        raise NoGradFnError(msg)


def _grad(
    outputs: tuple[Any, ...],
    inputs: tuple[Tensor, ...],
    grad_outputs: tuple[Any, ...] | None = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
) -> tuple[Tensor | None, ...]:
    """``grad`` over the outputs that require grad; all None when none does."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return autograd_grad(
        [o for o, _ in pairs],
        list(inputs),
        [g for _, g in pairs],
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
    )


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._make(np.zeros(t.shape, t.dtype))


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
    "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. "
    "This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
    "{i} in the grad_jacobian. This is not allowed in strict mode as it prevents from using "
    "the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(
    grads: tuple[Tensor | None, ...],
    refs: tuple[Tensor, ...],
    strict: bool,
    create_graph: bool,
    stage: str,
) -> tuple[Tensor, ...]:
    """None gradients as zeros, or (strict) PyTorch's error for the ``stage`` that
    produced them: "back", "back_trick", "double_back", "double_back_trick"."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise UnusedInputError(_INDEPENDENT[stage].format(i=i))
            g = _zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise NoGradFnError(
                f"The {what} of the user-provided function is independent of "
                f"input {i}. This is not allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def vjp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``: the vector-Jacobian product, shaped like the inputs."""
    with enable_grad():
        is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "vjp")
        ins = _preprocess(ins, create_graph, need_graph=True)
        is_outputs_tuple, outs = _as_tuple(
            func(*ins), "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outs, "outputs", strict)
        vs: tuple[Any, ...] | None = None
        if v is not None:
            _, vs = _as_tuple(v, "v", "vjp")
            vs = _preprocess(vs, create_graph, need_graph=False)
            _validate_v(vs, outs, is_outputs_tuple)
        elif len(outs) != 1 or outs[0]._data.size != 1:
            raise BadArgumentsError(
                "The vector v can only be None if the user-provided function returns a "
                "single Tensor with a single element."
            )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(outs, ins, vs, create_graph=create_graph)
        grads = _fill_in_zeros(res, ins, strict, create_graph, "back")
    return (
        _postprocess(_detach_all(outs, create_graph), is_outputs_tuple),
        _postprocess(_detach_all(grads, create_graph), is_inputs_tuple),
    )


def jvp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """``(func(inputs), J v)``: the Jacobian-vector product, shaped like the outputs,
    by the double-backward trick (the VJP is linear in its grad_output)."""
    with enable_grad():
        is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "jvp")
        ins = _preprocess(ins, create_graph, need_graph=True)
        vs: tuple[Any, ...] | None = None
        if v is not None:
            _, vs = _as_tuple(v, "v", "jvp")
            vs = _preprocess(vs, create_graph, need_graph=False)
            _validate_v(vs, ins, is_inputs_tuple)
        elif len(ins) != 1 or ins[0]._data.size != 1:
            raise BadArgumentsError(
                "The vector v can only be None if the input to the user-provided function "
                "is a single Tensor with a single element."
            )
        is_outputs_tuple, outs = _as_tuple(
            func(*ins), "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outs, "outputs", strict)
        grad_outputs = tuple(Tensor._make(np.zeros(o.shape, o.dtype), True) for o in outs)
        grad_inputs = _grad(outs, ins, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(grad_inputs, grad_outputs, vs, create_graph=create_graph)
        jv = _fill_in_zeros(res, outs, strict, create_graph, "back_trick")
    return (
        _postprocess(_detach_all(outs, create_graph), is_outputs_tuple),
        _postprocess(_detach_all(jv, create_graph), is_outputs_tuple),
    )


def _stack_rows(rows: list[Tensor], shape: tuple[int, ...], ref: Tensor) -> Tensor:
    """Rows of a Jacobian as one tensor of ``shape`` (output shape + input shape)."""
    if not rows:  # an empty output (PyTorch's stack would refuse the empty list)
        return Tensor._make(np.zeros(shape, ref.dtype))
    if not any(r.requires_grad for r in rows):
        return Tensor._make(np.stack([r._data for r in rows]).reshape(shape))
    return reshape(OPS["stack"].fn(rows, 0), shape)


def _basis_tangents(ins: tuple[Tensor, ...]) -> list[tuple[Tensor, ...]]:
    """One tangent tuple per input element: that element 1, every other 0."""
    out = []
    for j, x in enumerate(ins):
        for e in range(x._data.size):
            tangents = [np.zeros(t.shape, t.dtype) for t in ins]
            tangents[j].reshape(-1)[e] = 1
            out.append(tuple(Tensor._make(t) for t in tangents))
    return out


def _jacfwd(func: Callable[..., Any], inputs: Any, strict: bool, vectorize: bool) -> Any:
    """The Jacobian by forward mode: each basis tangent gives one column per output."""
    if strict:
        raise BadArgumentsError(
            "torch.autograd.functional.jacobian: `strict=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`strict=False` or `strategy="reverse-mode"`.'
        )
    is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotSupportedTogetherError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
            "only implemented for `vectorize=True`."
        )
    columns: list[list[np.ndarray]] = []
    primals: list[Tensor] = []
    is_outputs_tuple = False
    for tangents in _basis_tangents(ins):
        with forward_ad.dual_level():
            duals = tuple(forward_ad.make_dual(x, t) for x, t in zip(ins, tangents))
            result = func(*duals)
            is_outputs_tuple = isinstance(result, tuple)
            unpacked = [
                forward_ad.unpack_dual(o) for o in (result if is_outputs_tuple else (result,))
            ]
        primals = [u.primal for u in unpacked]
        columns.append(
            [
                np.zeros(u.primal.shape, u.primal.dtype) if u.tangent is None else u.tangent._data
                for u in unpacked
            ]
        )
    jac = []
    for i, out in enumerate(primals):
        start, row = 0, []
        for x in ins:
            n = x._data.size
            cols = [c[i] for c in columns[start : start + n]]
            start += n
            block = np.stack(cols, axis=-1) if cols else np.zeros(out.shape + (0,), out.dtype)
            row.append(Tensor._make(block.reshape(out.shape + x.shape).copy()))
        jac.append(tuple(row))
    return _postprocess(tuple(jac), (is_outputs_tuple, is_inputs_tuple))


def jacobian(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` has shape
    ``output_i.shape + input_j.shape``. ``vectorize`` is accepted (the rows are
    computed one backward each either way); ``strategy="forward-mode"`` needs
    ``vectorize=True``, as in PyTorch."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise BadArgumentsError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more '
            'performant. Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotSupportedTogetherError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.'
            )
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        ins = _preprocess(ins, create_graph, need_graph=True)
        is_outputs_tuple, outs = _as_tuple(
            func(*ins), "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outs, "outputs", strict)
        if vectorize and strict:
            raise BadArgumentsError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                "not supported together. Please either set `strict=False` or "
                "`vectorize=False`."
            )
        jac: list[tuple[Tensor, ...]] = []
        for i, out in enumerate(outs):
            rows: list[list[Tensor]] = [[] for _ in ins]
            m = out._data.size
            for e in range(m):
                onehot = np.zeros(m, out.dtype)
                onehot[e] = 1.0
                vj = _grad(
                    (out,),
                    ins,
                    (Tensor._make(onehot.reshape(out.shape)),),
                    retain_graph=True,
                    create_graph=create_graph,
                )
                for j, (g, x) in enumerate(zip(vj, ins)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise NoGradFnError(
                                "The jacobian of the user-provided function is independent "
                                f"of input {i}. This is not allowed in strict mode when "
                                "create_graph=True."
                            )
                        rows[j].append(g)
                    else:
                        if strict:
                            raise UnusedInputError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode."
                            )
                        rows[j].append(_zeros_like(x))
            jac.append(tuple(_stack_rows(r, out.shape + x.shape, x) for r, x in zip(rows, ins)))
        return _postprocess(
            _detach_all(tuple(jac), create_graph), (is_outputs_tuple, is_inputs_tuple)
        )


def hessian(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a scalar function: ``H[i][j]`` has shape
    ``input_i.shape + input_j.shape`` (the Jacobian of the Jacobian)."""
    is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "hessian")

    def scalar_output(*inp: Tensor) -> Tensor:
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise BadArgumentsError("The function given to hessian should return a single Tensor")
        if out._data.size != 1:
            raise NotScalarError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return reshape(out, ())

    def jac_func(*inp: Tensor) -> Any:
        jac = jacobian(scalar_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    if outer_jacobian_strategy == "forward-mode":
        # PyTorch's refusals first; the values are then the reverse-over-reverse ones
        # (the engine's detach drops tangents, so forward-over-reverse would see none)
        jacobian(
            lambda *a: a,
            ins,
            create_graph=create_graph,
            strict=strict,
            vectorize=vectorize,
            strategy="forward-mode",
        )
        outer_jacobian_strategy = "reverse-mode"
    res = jacobian(
        jac_func,
        ins,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _second_order_setup(
    func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool, strict: bool, name: str
) -> tuple[bool, tuple[Tensor, ...], tuple[Any, ...] | None, Tensor, tuple[Any, ...]]:
    """What vhp and hvp share: checked inputs, v and output, and the gradient of the
    output with respect to the inputs, with its graph."""
    is_inputs_tuple, ins = _as_tuple(inputs, "inputs", name)
    ins = _preprocess(ins, create_graph, need_graph=True)
    vs: tuple[Any, ...] | None = None
    if v is not None:
        _, vs = _as_tuple(v, "v", name)
        vs = _preprocess(vs, create_graph, need_graph=False)
        _validate_v(vs, ins, is_inputs_tuple)
    elif len(ins) != 1 or ins[0]._data.size != 1:
        raise BadArgumentsError(
            "The vector v can only be None if the input to the user-provided function is a "
            "single Tensor with a single element."
        )
    is_outputs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", name)
    _check_requires_grad(outs, "outputs", strict)
    if is_outputs_tuple or not isinstance(outs[0], Tensor):
        raise BadArgumentsError(f"The function given to {name} should return a single Tensor")
    if outs[0]._data.size != 1:
        raise NotScalarError(
            f"The Tensor returned by the function given to {name} should contain a single element"
        )
    jac = _grad(outs, ins, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return is_inputs_tuple, ins, vs, outs[0], jac


def vhp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Tensor, Any]:
    """``(func(inputs), v^T H)`` for a scalar ``func``: one double backward."""
    with enable_grad():
        is_inputs_tuple, ins, vs, out, jac = _second_order_setup(
            func, inputs, v, create_graph, strict, "vhp"
        )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(jac, ins, vs, create_graph=create_graph)
        product = _fill_in_zeros(res, ins, strict, create_graph, "double_back")
    return (
        _detach_all(out, create_graph),
        _postprocess(_detach_all(product, create_graph), is_inputs_tuple),
    )


def hvp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Tensor, Any]:
    """``(func(inputs), H v)`` for a scalar ``func``: the double-backward trick over the
    gradient (the transpose of ``vhp``; the same for a twice-differentiable ``func``)."""
    with enable_grad():
        is_inputs_tuple, ins, vs, out, jac = _second_order_setup(
            func, inputs, v, create_graph, strict, "hvp"
        )
        grad_jac = tuple(Tensor._make(np.zeros(x.shape, x.dtype), True) for x in ins)
        double_back = _grad(jac, ins, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(double_back, grad_jac, vs, create_graph=create_graph)
        product = _fill_in_zeros(res, ins, strict, create_graph, "double_back_trick")
    return (
        _detach_all(out, create_graph),
        _postprocess(_detach_all(product, create_graph), is_inputs_tuple),
    )
