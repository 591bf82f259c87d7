"""Gradient checks: every VJP against central finite differences, as
``torch.autograd.gradcheck`` / ``gradgradcheck`` do.

Small problems (at most ``FULL_JACOBIAN_MAX`` input elements) compare the full
Jacobians, one finite difference and one backward per element. Larger ones use
the HIPS-autograd / PyTorch fast-mode trick: a finite-difference JVP along a
random direction ``u`` and the VJP with a random ``v`` must agree on ``v·J·u``,
which costs two evaluations per input and one backward per output whatever
the sizes. Checks run in the inputs' dtype, so give float64 inputs. A complex output
is checked as two real ones, its real and imaginary parts (as PyTorch's gradcheck
splits it), so its backward is exercised with real and with imaginary cotangents.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .autograd import grad as autograd_grad
from .errors import BadArgumentsError, EngineError
from .grad_mode import enable_grad
from .ops.complex_ops import ImagBackward0, RealBackward0
from .tensor import Tensor

FULL_JACOBIAN_MAX = 64  # input elements (all inputs together) up to which Jacobians are full
_SLOW_MESSAGE_MAX = 1 << 16  # Jacobian entries up to which a fast-mode failure shows them
_SEED = 67280421310721  # fixed directions: a failure reproduces


class GradcheckError(EngineError):
    """Analytical and numerical gradients disagree (or backward is not reentrant)."""

    code = "gradcheck_failed"


def _as_tuple(x: Any) -> tuple[Any, ...]:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_float(x: Any) -> bool:
    return isinstance(x, Tensor) and x._data.dtype.kind == "f"


def _split_complex(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with each complex output replaced by its real and imaginary parts."""

    def split(*args: Any) -> tuple[Any, ...]:
        out: list[Any] = []
        for o in _as_tuple(fn(*args)):
            if isinstance(o, Tensor) and o._data.dtype.kind == "c":
                out += [RealBackward0.apply(o), ImagBackward0.apply(o)]
            else:
                out.append(o)
        return tuple(out)

    return split


def _differentiable(outputs: tuple[Any, ...]) -> list[int]:
    return [k for k, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]


def _show(values: np.ndarray) -> str:
    return repr(Tensor._make(np.asarray(values, dtype=np.float64)))


def _mismatch(out_idx: int, in_idx: int, numerical: Any, analytical: Any) -> str:
    return (
        f"Jacobian mismatch for output {out_idx:d} with respect to input {in_idx:d},\n"
        f"numerical:{_show(numerical)}\nanalytical:{_show(analytical)}\n"
    )


class _Problem:
    """One function at one point: its inputs, outputs and the ways to probe them."""

    def __init__(self, fn: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
        self.fn = fn
        self.inputs = inputs
        self.diff_in = [
            i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad
        ]
        if not self.diff_in:
            raise BadArgumentsError(
                "gradcheck expects at least one input tensor to require gradient, "
                "but none of them have requires_grad=True."
            )
        for i in self.diff_in:
            if inputs[i]._data.dtype != np.float64:
                warnings.warn(
                    f"Input #{i} requires gradient and is not a double precision floating "
                    "point or complex. This check will likely fail if all the inputs are "
                    "not of double precision floating point or complex. ",
                    stacklevel=3,
                )
        with enable_grad():
            self.outputs = _as_tuple(fn(*inputs))
        self.diff_out = _differentiable(self.outputs)
        # float outputs that do not require grad must not move (a backward that
        # escaped the graph, e.g. one written in raw numpy, shows up here)
        self.const_out = [
            k for k, o in enumerate(self.outputs) if _is_float(o) and k not in self.diff_out
        ]

    # -- finite differences ------------------------------------------------------------
    def _evaluate(self, i: int, data: np.ndarray) -> tuple[Any, ...]:
        args = list(self.inputs)
        args[i] = Tensor._make(data, True)
        out = _as_tuple(self.fn(*args))
        if len(out) != len(self.outputs):
            raise GradcheckError("the function returned a different number of outputs")
        for k in (*self.diff_out, *self.const_out):
            o, ref = out[k], self.outputs[k]
            if not isinstance(o, Tensor) or o.shape != ref.shape or o.dtype != ref.dtype:
                raise GradcheckError(
                    f"output {k} changed shape or dtype when input {i} was perturbed"
                )
        return out

    def directional(self, i: int, u: np.ndarray, eps: float) -> dict[int, np.ndarray]:
        """(f(x + eps u) - f(x - eps u)) / 2 eps for every float output, flattened."""
        x = self.inputs[i]._data
        base = np.array(x, dtype=x.dtype, order="C")
        step = (eps * u).astype(x.dtype).reshape(x.shape)
        hi = self._evaluate(i, base + step)
        lo = self._evaluate(i, base - step)
        return {
            k: (
                (hi[k]._data.astype(np.float64) - lo[k]._data.astype(np.float64)) / (2 * eps)
            ).reshape(-1)
            for k in (*self.diff_out, *self.const_out)
        }

    def numerical_jacobian(self, i: int, eps: float) -> dict[int, np.ndarray]:
        """Each float output's Jacobian w.r.t. input ``i``, shaped (input numel, output numel)."""
        n = self.inputs[i]._data.size
        jac = {
            k: np.zeros((n, self.outputs[k]._data.size)) for k in (*self.diff_out, *self.const_out)
        }
        for e in range(n):
            u = np.zeros(n)
            u[e] = 1.0
            for k, col in self.directional(i, u, eps).items():
                jac[k][e] = col
        return jac

    # -- backward ----------------------------------------------------------------------
    def vjp(self, k: int, v: np.ndarray) -> list[np.ndarray]:
        """``v^T J`` of output ``k`` for each differentiable input, flattened, float64."""
        out = self.outputs[k]
        g = Tensor._make(np.asarray(v, dtype=out._data.dtype).reshape(out.shape))
        ins = [self.inputs[i] for i in self.diff_in]
        grads = autograd_grad(out, ins, g, retain_graph=True, allow_unused=True)
        rows = []
        for x, gx in zip(ins, grads):
            if gx is None:
                rows.append(np.zeros(x._data.size))
                continue
            if gx.shape != x.shape:
                raise GradcheckError("Analytical gradient has incorrect size")
            rows.append(gx._data.astype(np.float64).reshape(-1))
        return rows

    def analytical_jacobian(self, k: int) -> list[np.ndarray]:
        m = self.outputs[k]._data.size
        jac = [np.zeros((self.inputs[i]._data.size, m)) for i in self.diff_in]
        for e in range(m):
            v = np.zeros(m)
            v[e] = 1.0
            for j, row in enumerate(self.vjp(k, v)):
                jac[j][:, e] = row
        return jac

    def check_reentrant(self, k: int, v: np.ndarray, first: list[np.ndarray], tol: float) -> None:
        for a, b in zip(first, self.vjp(k, v)):
            if a.size and not np.max(np.abs(a - b)) <= tol:
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and "
                    "grad_output multiple times gives different values, although analytical "
                    "gradient matches numerical gradient."
                    f"The tolerance for nondeterminism was {tol}."
                )

    def check_constant_outputs(self, numerical: dict[int, np.ndarray], i: int) -> None:
        for k in self.const_out:
            if np.any(numerical[k] != 0):
                raise GradcheckError(
                    "Numerical gradient for function expected to be zero: output "
                    f"{k} does not require grad but changes with input {i} (a backward "
                    "rule that left the graph, or a result that should require grad)"
                )


def _slow(p: _Problem, eps: float, rtol: float, atol: float, nondet_tol: float) -> None:
    numerical = {i: p.numerical_jacobian(i, eps) for i in p.diff_in}
    for i in p.diff_in:
        p.check_constant_outputs(numerical[i], i)
    for oi, k in enumerate(p.diff_out):
        analytical = p.analytical_jacobian(k)
        m = p.outputs[k]._data.size
        if m:
            v = np.zeros(m)
            v[0] = 1.0
            p.check_reentrant(k, v, [a[:, 0] for a in analytical], nondet_tol)
        for j, i in enumerate(p.diff_in):
            n, a = numerical[i][k], analytical[j]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(_mismatch(oi, j, n, a))


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    u = rng.random(n)
    norm = np.linalg.norm(u)
    return u / norm if norm else u


def _fast(p: _Problem, eps: float, rtol: float, atol: float, nondet_tol: float) -> None:
    rng = np.random.default_rng(_SEED)
    us = {i: _unit(rng, p.inputs[i]._data.size) for i in p.diff_in}
    vs = {k: _unit(rng, p.outputs[k]._data.size) for k in p.diff_out}
    jvps = {i: p.directional(i, us[i], eps) for i in p.diff_in}
    for i in p.diff_in:
        p.check_constant_outputs(jvps[i], i)
    for oi, k in enumerate(p.diff_out):
        vj = p.vjp(k, vs[k])
        p.check_reentrant(k, vs[k], vj, nondet_tol)
        for j, i in enumerate(p.diff_in):
            n = float(vs[k] @ jvps[i][k])
            a = float(vj[j] @ us[i])
            tol = atol * float(us[i].sum()) * float(vs[k].sum())
            if not np.allclose(a, n, rtol=rtol, atol=tol):
                detail = _slow_detail(p, i, j, k, eps, rtol, atol)
                raise GradcheckError(_mismatch(oi, j, np.float64(n), np.float64(a)) + detail)


def _slow_detail(p: _Problem, i: int, j: int, k: int, eps: float, rtol: float, atol: float) -> str:
    """Full Jacobians for a fast-mode failure, when they are small enough to print."""
    if p.inputs[i]._data.size * p.outputs[k]._data.size > _SLOW_MESSAGE_MAX:
        return ""
    n = p.numerical_jacobian(i, eps)[k]
    a = p.analytical_jacobian(k)[j]
    diff = float(np.max(np.abs(n - a))) if n.size else 0.0
    msg = (
        "\nThe above quantities relating the numerical and analytical jacobians are computed \n"
        "in fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
        f"Numerical:\n {_show(n)}\nAnalytical:\n{_show(a)}\n\n"
        f"The max per-element difference (slow mode) is: {diff}.\n"
    )
    if np.allclose(a, n, rtol=rtol, atol=atol):
        msg += (
            "\nFast gradcheck failed but element-wise differences are small. This means "
            "that the test might've passed in slow_mode!\n"
        )
    return msg


def gradcheck(
    fn: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    *,
    fast_mode: bool | None = None,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
) -> bool:
    """``torch.autograd.gradcheck``: True when every VJP of ``fn`` at ``inputs`` matches
    central finite differences, else GradcheckError (or False with raise_exception=False).

    ``check_undefined_grad``: with zero gradients for the outputs (the engine's form of
    PyTorch's undefined ones) backward must run and give None or zeros.
    ``check_grad_dtypes``: each gradient has its input's dtype.

    Inputs that do not require grad are held fixed; outputs that do not require
    grad (integer indices, Python numbers) are not differentiated. ``fast_mode``
    None picks full Jacobians up to ``FULL_JACOBIAN_MAX`` input elements and the
    random-direction check above that."""
    try:
        p = _Problem(_split_complex(fn), _as_tuple(inputs))
        if not p.diff_out:
            _no_differentiable_outputs(p, eps)
            return True
        if fast_mode is None:
            fast_mode = sum(p.inputs[i]._data.size for i in p.diff_in) > FULL_JACOBIAN_MAX
        (_fast if fast_mode else _slow)(p, eps, rtol, atol, nondet_tol)
        if check_grad_dtypes:
            _check_grad_dtypes(p)
        _check_mul_by_grad_output(p)
        if check_undefined_grad:
            _check_zero_output_grads(p)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


UNDEFINED_NOTE = 'Please look at "Notes about undefined output gradients" in ' + (
    '"tools/autograd/derivatives.yaml"'
)


def _check_mul_by_grad_output(p: _Problem) -> None:
    """PyTorch's first check after the Jacobians: zero grad_outputs give zero grads of
    each input's dtype and size (a backward error propagates as it is)."""
    ins = [p.inputs[i] for i in p.diff_in]
    outs = [p.outputs[k] for k in p.diff_out]
    zeros = [Tensor._make(np.zeros(o.shape, o.dtype)) for o in outs]
    for x, g in zip(ins, autograd_grad(outs, ins, zeros, retain_graph=True, allow_unused=True)):
        if g is None:
            continue
        if np.any(g._data != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.shape != x.shape:
            raise GradcheckError("grad is incorrect size")


def _check_zero_output_grads(p: _Problem) -> None:
    """PyTorch's undefined-grad check, with zeros for undefined grads (the engine has no
    undefined tensor): all of them, then each in turn with several outputs; backward must
    not fail."""
    n = len(p.diff_out)
    patterns = [[True] * n] + ([[k == j for k in range(n)] for j in range(n)] if n > 1 else [])
    ins = [p.inputs[i] for i in p.diff_in]
    rng = np.random.default_rng(_SEED)
    for zero in patterns:
        with enable_grad():
            outs = _as_tuple(p.fn(*p.inputs))
        diff = [outs[k] for k in _differentiable(outs)]
        grads = [
            Tensor._make(
                np.zeros(o.shape, o.dtype) if z else rng.uniform(-1, 1, o.shape).astype(o.dtype)
            )
            for o, z in zip(diff, zero)
        ]
        try:
            autograd_grad(diff, ins, grads, allow_unused=True)
        except (EngineError, RuntimeError) as exc:
            _warn_undefined()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. " + UNDEFINED_NOTE
            ) from exc


def _warn_undefined() -> None:
    warnings.warn(
        "Backwards compatibility: New undefined gradient support checking feature is enabled "
        "by default, but it may break existing callers of this function. If this is true for "
        'you, you can call this function with "check_undefined_grad=False" to disable the '
        "feature",
        stacklevel=4,
    )


def _check_grad_dtypes(p: _Problem) -> None:
    for k in p.diff_out:
        ins = [p.inputs[i] for i in p.diff_in]
        g = Tensor._make(np.ones(p.outputs[k].shape, p.outputs[k].dtype))
        for x, gx in zip(
            ins, autograd_grad(p.outputs[k], ins, g, retain_graph=True, allow_unused=True)
        ):
            if gx is not None and gx.dtype != x.dtype:
                raise GradcheckError("Gradient has dtype mismatch")


def _no_differentiable_outputs(p: _Problem, eps: float) -> None:
    for i in p.diff_in:
        numerical = p.numerical_jacobian(i, eps)
        if any(np.any(numerical[k] != 0) for k in p.const_out):
            raise GradcheckError("Numerical gradient for function expected to be zero")


def gradgradcheck(
    fn: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    *,
    fast_mode: bool | None = None,
) -> bool:
    """``torch.autograd.gradgradcheck``: gradcheck of the backward pass itself, i.e. of
    ``(inputs, grad_outputs) -> grad(fn(inputs), inputs, grad_outputs, create_graph=True)``.

    Without ``grad_outputs``, random ones in [-1, 1) (seeded) that require grad.
    ``gen_non_contig_grad_outputs`` is accepted for PyTorch compatibility (numpy
    layouts do not change the values)."""
    del gen_non_contig_grad_outputs
    tupled = _as_tuple(inputs)
    if grad_outputs is None:  # complex outputs as real pairs: real cotangents to perturb
        fn = _split_complex(fn)
        with enable_grad():
            outs = _as_tuple(fn(*tupled))
        rng = np.random.default_rng(_SEED)
        tupled_go: tuple[Any, ...] = tuple(
            Tensor._make(rng.uniform(-1.0, 1.0, outs[k].shape).astype(outs[k].dtype), True)
            for k in _differentiable(outs)
        )
    else:
        tupled_go = _as_tuple(grad_outputs)
    n_in = len(tupled)
    diff_in = [i for i, x in enumerate(tupled) if isinstance(x, Tensor) and x.requires_grad]
    diff_go = {i for i, g in enumerate(tupled_go) if isinstance(g, Tensor) and g.requires_grad}

    def first_derivative(*args: Any) -> tuple[Tensor, ...]:
        with enable_grad():
            ins = [x.requires_grad_() if i in diff_in else x for i, x in enumerate(args[:n_in])]
            gos = [g.requires_grad_() if i in diff_go else g for i, g in enumerate(args[n_in:])]
            outs = _as_tuple(fn(*ins))
            outputs = [outs[k] for k in _differentiable(outs)]
            grads = autograd_grad(
                outputs,
                [ins[i] for i in diff_in],
                gos,
                create_graph=True,
                allow_unused=True,
            )
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivative,
        tupled + tupled_go,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        fast_mode=fast_mode,
    )
