"""What the differential fuzzer (tests/fuzz) found, minimised into regular tests.

Each scenario is written once against a module ``T`` (``engine`` or ``torch``) and
its outcome compared: values, ``.grad``, grad_fn names and errors (class and
message). The comment on each says which fuzzer finding it came from.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import engine as E
from tests.engine.test_semantics import both, fn_name, node_name, outcome, quiet_grad
from tests.engine.torch_oracle import assert_values, require_torch
from tests.fuzz.interpreter import error_kind

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1
pytestmark = pytest.mark.torch


def _t(T: Any, values: Any, requires_grad: bool = False) -> Any:
    return T.tensor(np.array(values, dtype=np.float64), requires_grad=requires_grad)


def _g(t: Any) -> Any:
    g = quiet_grad(t)
    return None if g is None else g.detach().clone()


# -- retained grads: updated by every node that runs, in grad() too --------------------------


def test_grad_updates_retained_grads_on_its_path() -> None:
    """autograd.grad leaves leaves' .grad alone but a non-leaf that retains grad gets
    its gradient when its node runs (seeds 102, 175, 295, 297)."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.0, 2.0], True)
        h = x * 3
        h.retain_grad()
        y = (h * h).sum()
        (gx,) = (
            T.autograd.grad(y, [x], retain_graph=True)
            if T is torch
            else T.grad(y, [x], retain_graph=True)
        )
        return gx, _g(h), _g(x), fn_name(y)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_backward_inputs_updates_retained_grads_and_root() -> None:
    """backward(inputs=[b]) runs the nodes between the root and b: a retaining tensor
    on the way gets .grad, one off the path does not; a single root always gets its
    own (PyTorch runs the root node's hooks whatever the inputs)."""

    def scenario(T: Any) -> Any:
        a, b = _t(T, [1.0, 2.0], True), _t(T, [3.0, 4.0], True)
        r = a * b
        r.retain_grad()
        s = a + 1
        s.retain_grad()
        z = r * s
        z.retain_grad()
        z.backward(_t(T, [1.0, 1.0]), inputs=[b], retain_graph=True)
        q = a.exp()
        q.retain_grad()
        q.backward(_t(T, [1.0, 1.0]), inputs=[b])  # b unreachable: no error, q.grad set
        again = outcome(lambda: q.backward(_t(T, [1.0, 1.0])))[0]  # q's node never ran
        return _g(z), _g(r), _g(s), _g(a), _g(b), _g(q), again

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_backward_non_leaf_input_retains_grad_afterwards() -> None:
    def scenario(T: Any) -> Any:
        a = _t(T, [1.0, 2.0], True)
        u = a * 2
        v = u * 3
        v.backward(_t(T, [1.0, 1.0]), inputs=[u], retain_graph=True)
        first = (_g(u), u.retains_grad, _g(a))
        v.backward(_t(T, [1.0, 1.0]))
        return first, _g(u), _g(a)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_several_roots_off_the_path_get_nothing() -> None:
    def scenario(T: Any) -> Any:
        a, b = _t(T, [1.0, 2.0], True), _t(T, [3.0, 4.0], True)
        p, q = a * 2, b * 2
        p.retain_grad()
        q.retain_grad()
        T.autograd.backward([p, q], [_t(T, [1.0, 1.0]), _t(T, [1.0, 1.0])], inputs=[b])
        return _g(p), _g(q), _g(a), _g(b)

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- hooks in grad(): on leaves, and before or after the capture -----------------------------


def _grad(T: Any, *args: Any, **kwargs: Any) -> Any:
    return T.autograd.grad(*args, **kwargs) if T is torch else T.grad(*args, **kwargs)


def test_grad_applies_leaf_hooks() -> None:
    """A leaf's hooks run before autograd.grad captures its gradient, also when the
    output is the leaf itself (seeds 70, 259, 273)."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.0, 2.0], True)
        calls = []
        x.register_hook(lambda g: calls.append(1) or g * -2)
        (direct,) = _grad(T, x, [x], _t(T, [1.0, 1.0]))
        y = (x * x).sum()
        twice = _grad(T, y, [x, x], retain_graph=True)
        return direct, twice, len(calls), _g(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_grad_captures_before_hooks_when_the_node_runs_on() -> None:
    """A captured non-leaf whose node also leads to another input is captured before
    its hooks (they apply to what flows on); captured alone, after them."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.0, 2.0], True)
        h = x * 3
        h.register_hook(lambda g: g * 10)
        h.retain_grad()
        y = (h * 3).sum()
        both_inputs = _grad(T, y, [x, h], retain_graph=True)
        after = _g(h)
        alone = _grad(T, y, [h], retain_graph=True)
        return both_inputs, after, alone, _g(h), _g(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- what products save: an operand is version-checked only where PyTorch saved it -----------

PRODUCTS = {
    "mm": lambda T, a, b: a @ b,
    "matmul 3-d @ 2-d": lambda T, a, b: T.matmul(a.unsqueeze(0).expand(2, 2, 2), b),
    "matmul 1-d @ 2-d": lambda T, a, b: T.matmul(a[0], b),
    "matmul 2-d @ 1-d": lambda T, a, b: T.matmul(a, b[0]),
    "dot": lambda T, a, b: T.dot(a[0], b[0]),
    "mv": lambda T, a, b: T.mv(a, b[0]),
    "linear": lambda T, a, b: (T.nn.functional.linear if T is torch else E.linear)(a, b),
    "linear 3-d": lambda T, a, b: (T.nn.functional.linear if T is torch else E.linear)(
        a.unsqueeze(0).expand(2, 2, 2), b, b[0]
    ),
}


# PyTorch's matmul folds these shapes into mm on a reshaped (copied, for an expanded
# operand) or unsqueezed operand, and saves that: what is version-checked, and the shape
# its error names, differ from the engine's one fused node
DECOMPOSED = {
    ("matmul 3-d @ 2-d", "a"),
    ("matmul 3-d @ 2-d", "b"),
    ("matmul 3-d @ 2-d", "ab"),
    ("matmul 1-d @ 2-d", "b"),
    ("matmul 1-d @ 2-d", "ab"),
    ("linear 3-d", "a"),
    ("linear 3-d", "b"),
    ("linear 3-d", "ab"),
}


def _product_cases() -> list[Any]:
    cases = []
    for op in PRODUCTS:
        for grad in ("a", "b", "ab"):
            marks = []
            if (op, grad) in DECOMPOSED:
                reason = "matmul/linear save a reshaped operand in PyTorch (engine/ops/linalg.py)"
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            cases.append(pytest.param(op, grad, marks=marks))
    return cases


@pytest.mark.parametrize(("op", "grad"), _product_cases())
def test_products_save_an_operand_only_for_the_other(op: str, grad: str) -> None:
    """Edit each operand in place before backward: an error exactly where PyTorch's
    version check fires, the same gradients otherwise."""

    def case(T: Any, written: str) -> Any:
        a = _t(T, [[1.0, 2.0], [3.0, 4.0]], "a" in grad) * 1
        b = _t(T, [[0.5, -1.0], [2.0, 1.5]], "b" in grad) * 1
        r = PRODUCTS[op](T, a, b)
        with T.no_grad():
            (a if written == "a" else b).mul_(2)
        leaves = [t for t in (a, b) if t.requires_grad]
        status, value = outcome(lambda: _grad(T, r.sum(), leaves))
        return fn_name(r), value if status == "error" else [g.detach() for g in value]

    def scenario(T: Any) -> Any:
        return [case(T, "a"), case(T, "b")]

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- in-place writes whose source overlaps the target -----------------------------------------

OVERLAPS = {
    "shifted slices": lambda T, x: x[1:].mul_(x[:2]),
    "itself": lambda T, x: x.add_(x),
    "a full alias": lambda T, x: x.add_(x[:]),
    "a row into the whole": lambda T, x: x.view(2, 2)[:, :2].reshape(4)[:0].add_(x[:0]),
    "the transpose of a square": lambda T, x: x[:4].view(2, 2).add_(x[:4].view(2, 2).t()),
    "a row of itself": lambda T, x: x[:4].view(2, 2).add_(x[:2]),
    "two disjoint rows": lambda T, x: x[:4].view(2, 2)[0].add_(x[:4].view(2, 2)[1]),
    "a strided column": lambda T, x: x[:4].view(2, 2)[:, 0].add_(x[:2]),
    "clamp by a part of itself": lambda T, x: x.clamp_(min=x[:1]),
    "tracked": lambda T, x: (x * 1)[1:].mul_(x[:2]),
}


@pytest.mark.parametrize("case", list(OVERLAPS))
def test_inplace_partial_overlap_refused_as_in_torch(case: str) -> None:
    """Seed 3: ``x.sub_(x[0])`` reads memory it overwrites; PyTorch refuses at write time
    when it can tell (dense operands), and lets a full alias or an expand through."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.0, 2.0, 3.0, 4.0, 5.0], True)
        y = x.detach() if case != "tracked" else x
        status, value = outcome(lambda: OVERLAPS[case](T, y))
        return value if status == "error" else (y.detach().clone(), fn_name(value))

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- abs at NaN: the gradient is sign(x), and sign(NaN) is 0 in PyTorch -----------------------


def test_abs_gradient_at_nan_is_zero() -> None:
    def scenario(T: Any) -> Any:
        x = _t(T, [float("nan"), 1.0, -2.0, 0.0], True)
        x.abs().sum().backward()
        return _g(x), x.detach().sign()

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_grad_result_and_retained_grad_do_not_alias() -> None:
    """The gradient grad() returns for a retaining input and its new .grad are two
    tensors (PyTorch's retain hook clones): zeroing one leaves the other."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.0, 2.0], True)
        h = x * 3
        h.retain_grad()
        y = (h * h).sum()
        (gh,) = _grad(T, y, [h], retain_graph=True)
        h.grad.zero_()
        return gh, _g(h)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_grad_checks_outputs_before_inputs() -> None:
    """Seed 1490: neither the output nor the input requires grad: PyTorch names the
    output first."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.0, 2.0])
        return outcome(lambda: _grad(T, x * 2, [x], _t(T, [1.0, 1.0])))[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_create_graph_grad_is_a_dense_copy() -> None:
    """Seed 1596: sum's gradient is an expand; with create_graph the leaf's .grad is
    still a dense copy (AccumulateGrad copies under grad mode), so zero_ works."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], True)
        x.sum().backward(create_graph=True)
        first = (_g(x), x.grad.requires_grad)
        x.grad.zero_()
        y = _t(T, [1.0, 2.0], True)
        (y * y).sum().backward(create_graph=True)
        return first, _g(x), _g(y), y.grad.requires_grad

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_version_error_names_copy_slices_as_torch_does() -> None:
    """Seeds 159, 289: a saved tensor later written through an index is the output of
    CopySlices, which PyTorch's message names by its C++ name."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.0, 2.0, 3.0], True)
        a = x * 1
        b = a.sin()
        a[0] = 5.0
        return fn_name(a), outcome(lambda: b.sum().backward())[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("write", ["setitem", "mul_"])
def test_copy_slices_is_freed_by_backward(write: str) -> None:
    """Seed 2690: a write through an index records CopySlices, which a backward
    without retain_graph frees even when the op it wraps saved nothing."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], True)
        y = x.mean(-2, keepdim=True)
        if write == "setitem":
            y[0] = -0.0
        else:
            y[0].mul_(2)
        y.backward(_t(T, [[1.0, 1.0]]))
        again = outcome(lambda: y.backward(_t(T, [[1.0, 1.0]]), inputs=[x]))[1]
        return fn_name(y), again, _g(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("make", ["pow", "clamp", "prod", "exp"])
def test_version_error_names_the_overload(make: str) -> None:
    """Seeds 671, 700, 1340: PyTorch's message drops "Backward0" but keeps an overload's
    number (PowBackward1 is "Pow1")."""
    ops = {
        "pow": lambda a: a**a,
        "clamp": lambda a: a.clamp(-0.5, 0.5),
        "prod": lambda a: a.prod(0),
        "exp": lambda a: a.exp(),
    }

    def scenario(T: Any) -> Any:
        x = _t(T, [0.5, 1.5, 2.0], True)
        a = ops[make](x * 1)
        b = a.sin()
        a.detach().mul_(2)
        return fn_name(a), outcome(lambda: b.sum().backward())[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_matmul_vector_matrix_gradients_record_mm() -> None:
    """Seed 2708: PyTorch computes ``1-d @ 2-d`` as ``a.unsqueeze(0).mm(b).squeeze_(0)``,
    so with create_graph its gradients are a squeezed mm and an mm."""

    def scenario(T: Any) -> Any:
        a = _t(T, [0.5, -1.0, 2.0], True)
        b = _t(T, [[1.0, 2.0], [3.0, -4.0], [0.5, 0.25]], True)
        r = a @ b
        ga, gb = _grad(T, r, [a, b], _t(T, [1.0, -2.0]), create_graph=True)
        return fn_name(r), fn_name(ga), fn_name(gb), ga, gb

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- create_graph records PyTorch's ops: names through the whole graph ------------------------


def _graph(node: Any, seen: dict[int, Any] | None = None) -> list[Any]:
    """The names of a backward graph, depth first through ``next_functions`` (None for an
    input that needs no gradient): two graphs that record the same ops list the same."""
    seen = {} if seen is None else seen
    if node is None:
        return [None]
    name = node_name(node)
    if name == "AccumulateGrad" or id(node) in seen:
        return [name]
    seen[id(node)] = node  # kept alive, so its id is not reused
    return [name, [_graph(child, seen) for child, _ in node.next_functions]]


def _graphs(*tensors: Any) -> list[Any]:
    return [None if t is None else _graph(t.grad_fn) for t in tensors]


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_gradient_records_backward_data_nodes(op: str, dim: int) -> None:
    """Seeds 12, 88, 166, 285 (HTTP 1028): with create_graph softmax's gradient is PyTorch's
    ``_softmax_backward_data`` node, and its own gradients (softmax_double_backward for
    the output) record what PyTorch's do, third order included."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[1.0, 2.0, -3.0], [0.5, -1.0, 2.0]], True)
        go = _t(T, [[1.0, -2.0, 3.0], [0.25, float("inf"), 2.0]] if dim else [[1, -2, 3]] * 2)
        go.requires_grad_(True)
        y = getattr(x, op)(dim)
        (g,) = _grad(T, y, [x], go, create_graph=True)
        ggx, ggo = _grad(
            T, g, [x, go], _t(T, [[1.0, 2.0, -3.0], [0.5, 1.0, 2.0]]), create_graph=True
        )
        third = _grad(T, (ggx * ggx).sum() + (ggo * ggo).sum(), [x, go])
        return _graphs(g, ggx, ggo), [g, ggx, ggo], third

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize(
    "shapes", [((), (3,)), ((), (2, 3)), ((1,), (2, 3)), ((3,), (2, 3)), ((2, 1), (2, 3))]
)
def test_broadcast_gradient_sums_as_torch_records(shapes: Any) -> None:
    """Seed 25: a gradient summed back to a 0-d input is ``sum()`` (SumBackward0); to fewer
    dims, a keepdim sum then a view (SumBackward1, ViewBackward0), as ``at::sum_to``."""

    def scenario(T: Any) -> Any:
        a = T.ones(shapes[0], dtype=T.float64, requires_grad=True)
        b = T.ones(shapes[1], dtype=T.float64, requires_grad=True)
        y = a * b
        go = T.full(tuple(y.shape), 2.0, dtype=T.float64, requires_grad=True)
        (g,) = _grad(T, y, [a], go, create_graph=True)
        (gg,) = _grad(T, g.sum(), [go])
        return _graphs(g), g, gg

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_div_gradient_for_the_divisor_is_torchs_formula() -> None:
    """Seeds 83, 297: the divisor's gradient is ``-g * ((a / b) / b)`` (MulBackward0 on
    top), so an infinite divisor's second derivative is 0, not NaN."""

    def scenario(T: Any) -> Any:
        b = _t(T, [float("inf"), 2.0, -0.5], True)
        a = _t(T, [1.9, -0.4, 3.0], True)
        (gb,) = _grad(T, a / b, [b], _t(T, [1.1, -1.9, 1.0]), create_graph=True)
        gb.sum().backward()
        c = _t(T, [-0.02])
        (gc,) = _grad(T, (c * c) / b, [b], _t(T, [1.0, 1.0, 1.0]), create_graph=True)
        return _graphs(gb, gc), gb, _g(b), _g(a), gc

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("dims", [None, 1, (0, 1)])
def test_mean_gradient_divides_by_a_number(dims: Any) -> None:
    """Seed 377: mean's gradient divides by the count as PyTorch's C++ does (DivBackward1),
    after one unsqueeze per reduced dim (UnsqueezeBackward0, not a view)."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], True)
        y = x.mean() if dims is None else x.mean(dims)
        go = T.ones(tuple(y.shape), dtype=T.float64, requires_grad=True)
        (g,) = _grad(T, y, [x], go * 3, create_graph=True)
        return _graphs(g), g

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("power", ["square", 2, 3, -1, 0.5])
def test_pow_second_derivative_is_recorded(power: Any) -> None:
    """Seed 317: pow's gradient is ``g * (p * x.pow(p - 1))`` as written (MulBackward1 over
    PowBackward0), so square's second derivative is a graph through ``x.pow(1)`` and its
    third is zero without one."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.5, -2.0, 0.75], True)
        y = x.square() if power == "square" else x.abs() ** power
        (g1,) = _grad(T, y.sum(), [x], create_graph=True)
        (g2,) = _grad(T, g1.sum(), [x], create_graph=True)
        (g3,) = _grad(T, g2.sum(), [x], create_graph=True)
        return _graphs(g1, g2, g3), [g1, g2, g3], g3.requires_grad

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_saved_result_written_through_a_view_unpacks_with_its_history() -> None:
    """Seed 86: relu_ through a view saves its result; in the second-order graph that
    result carries the view's history (AsStridedBackward0), so a later write names it, and
    the first-order gradient through the view is a CopySlices."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.0, -2.0, 3.0], True)
        a = x * 1
        v = a[1:]
        v.relu_()
        (g,) = _grad(T, a, [x], _t(T, [1.0, 1.0, 1.0]), create_graph=True)
        a[0] = 5.0
        return _graphs(g, v), outcome(lambda: g.sum().backward())[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- found by the widened fuzzer (index tensors, more ops, inputs= of non-leaves) -------------


@pytest.mark.parametrize("grad", [False, True])
def test_write_through_a_row_of_an_expand_reaches_the_base(grad: bool) -> None:
    """Seeds 675, 1039, 1076, 1158: ``e = x.expand(2, 3); e[0] = v`` writes x's memory (every
    row of e sees it); the engine wrote into a private copy of the read-only broadcast."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[0.5, -1.0, 2.0]], grad) * 1
        e = x.expand(2, 3)
        v = _t(T, [9.0], grad)
        e[0] = v
        out = [x.detach().clone(), e.detach().clone(), fn_name(e), fn_name(x)]
        if grad:
            e.sum().backward()
            out.append(_g(v))
        return out

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_backward_inputs_runs_and_frees_a_non_leaf_inputs_node() -> None:
    """Seeds 104, 1044, 1555: backward(inputs=[h]) runs h's own node as PyTorch does (its
    result goes nowhere), so without retain_graph it is freed: a later grad through it fails."""

    def scenario(T: Any) -> Any:
        x = _t(T, [-0.677], True)
        h = x.tanh()
        (x * h).backward(_t(T, [1.0]), inputs=[h])
        got = (_g(h), _g(x))
        return got, outcome(lambda: _grad(T, h * 2, [x], _t(T, [1.0])))[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp", "softmax", "log_softmax"])
def test_scan_and_softmax_results_are_contiguous(op: str) -> None:
    """Seed 1135: these results are contiguous in PyTorch whatever the input's layout, so a
    reshape of them is a view (ViewBackward0); numpy kept the transposed layout."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], True).t()
        y = getattr(x, op)(0)
        return fn_name(y.reshape(-1)), y.reshape(-1)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("op", ["mul", "div"])
def test_version_check_reads_other_before_self(op: str) -> None:
    """Seeds 1194, 1524: with both operands written since, PyTorch's message names
    ``other``, which its node unpacks first."""

    def scenario(T: Any) -> Any:
        a = _t(T, [1.0, 2.0], True)
        b = T.tensor(np.array([3.0, 4.0], dtype=np.float32), requires_grad=True)
        y = a * b if op == "mul" else a / b
        with T.no_grad():
            a.add_(1)
            b.add_(1)
        return outcome(lambda: y.sum().backward())[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_cumprod_over_a_single_element_dim_passes_the_gradient_on() -> None:
    """Seed 1806: over a dim of size 1, cumprod's gradient is the incoming one itself."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[[-0.654, 0.081, 0.662]], [[0.325, 0.697, 0.262]]], True)
        y = x.cumprod(-2).sin()
        (g,) = _grad(
            T, y, [x], T.ones(2, 1, 3, dtype=T.float64, requires_grad=True) * 2, create_graph=True
        )
        return _graphs(g), g

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_inplace_on_a_view_made_before_its_base_required_grad() -> None:
    """Seed 1873: PyTorch checks a view's grad_fn as last set (reading ``.grad`` does not
    regenerate it): a view made while its base needed no grad, its base since written with
    a tensor that does, is refused as a leaf; once its grad_fn is read, it is not."""

    def scenario(T: Any) -> Any:
        out = []
        for read in (False, True):
            base = _t(T, [0.157, -0.241, -0.714]).abs()
            v = base.reshape(-1)
            base[0:3].add_(_t(T, [-1.14], True))
            _g(v)
            if read:
                fn_name(v)
            out.append(outcome(lambda v=v: v.exp_())[1])
        return [o if isinstance(o, BaseException) else fn_name(o) for o in out]

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("repeat", [False, True])
def test_as_strided_gradient_is_a_view_of_scattered_zeros(repeat: bool) -> None:
    """Seed 1942: the gradient through a regenerated view is PyTorch's as_strided_backward,
    an as_strided view (AsStridedBackward0) of zeros written by CopySlices (IndexAdd where
    the view repeats elements)."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[1.0, 2.0], [3.0, 4.0]], True)
        y = x * 1
        v = y.t()
        w = v[:, :1].expand(2, 2) if repeat else v[1:]
        with T.no_grad():
            y.mul_(2)  # w is stale: its history is regenerated as an as_strided of y
        go = T.ones(tuple(w.shape), dtype=T.float64, requires_grad=True)
        (g,) = _grad(T, w, [y], go * 3, create_graph=True)
        return _graphs(g), g

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_over_a_dim_gradient_is_a_scatter(op: str, keepdim: bool) -> None:
    """Seed 2765: max/min over a dim send the gradient to the returned index as PyTorch's
    value_selecting_reduction_backward does: ``zeros.scatter(dim, indices, grad)``."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[[-1.5, -1.9, -0.2]], [[-1.1, 1.7, -0.2]]], True)
        values = getattr(x, op)(2, keepdim=keepdim)[0]
        go = T.ones(tuple(values.shape), dtype=T.float64, requires_grad=True)
        (g,) = _grad(T, values.cos(), [x], go * 2, create_graph=True)
        (gg,) = _grad(T, g.sum(), [go])
        return _graphs(g), g, gg

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_backward_checks_the_root_before_the_inputs() -> None:
    """Seeds 5201, 5309, 5689: a root that needs no grad is named before ``inputs=``."""

    def scenario(T: Any) -> Any:
        c = _t(T, [1.0, 2.0]) * 2
        return outcome(lambda: c.backward(_t(T, [1.0, 1.0]), inputs=[c]))[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_cumsum_over_a_single_element_dim_passes_the_gradient_on() -> None:
    """Seed 5790: PyTorch's cumsum_backward returns the gradient itself over a dim of size 1
    (no flips recorded)."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[[-1.0, -0.6, 1.5]], [[2.0, 1.6, 1.0]]], True)
        y = x.cumsum(-2).cos()
        go = T.ones(2, 1, 3, dtype=T.float64, requires_grad=True)
        (g,) = _grad(T, y, [x], go * 2, create_graph=True)
        return _graphs(g), g

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_saved_result_of_a_view_names_its_history_only_while_it_lives() -> None:
    """Seed 5060: the view's history a saved result keeps is held weakly, as PyTorch's
    SavedVariable: once the view regenerated its grad_fn (its base written since) the old
    node is gone and the error names the op itself (Sigmoid), not AsStrided."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[0.1, -1.7, 1.6], [-0.8, 1.3, -1.7]], True)
        a = x.index_select(0, T.tensor(np.array([0, 0])))
        v = a.transpose(0, 1)
        v.sigmoid_()
        a.mul_(1.5)
        return outcome(lambda: _grad(T, v, [x], T.ones(3, 2, dtype=T.float64)))[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_pow_exponent_gradient_multiplies_outside_the_where() -> None:
    """Seed 6539: the exponent's gradient is ``grad * where(cond, 0, result * log(self))``
    (MulBackward0 on top), so an infinite grad where the base is 0 gives NaN, as PyTorch."""

    def scenario(T: Any) -> Any:
        x = _t(T, [-0.5, 1.0, 2.0], True)
        base = _t(T, [0.7, 0.0, 1.5])
        go = _t(T, [float("-inf"), float("inf"), 2.0])
        go.requires_grad_(True)
        (g,) = _grad(T, base**x, [x], go, create_graph=True)
        h = _t(T, [0.5, -1.0, 2.0], True)
        (g3,) = _grad(
            T, 3.0**h, [h], T.ones(3, dtype=T.float64, requires_grad=True), create_graph=True
        )
        return fn_name(g), g, _graphs(g3), g3

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_retained_grad_of_a_stale_view_fires_on_its_old_node() -> None:
    """Seed 7931: a view that retains grad, its base written since (its grad_fn not read
    again), still gets ``.grad`` when a graph recorded before the write runs its old node."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.5, 2.0, -0.5], True)
        v = x.reshape(-1)
        w = v.reshape(-1)
        v.retain_grad()
        total = w.sum()
        with T.no_grad():
            x[0] = 7.0
        total.backward()
        return _g(v), _g(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_flip_gradient_is_a_flip() -> None:
    """Seed 8914: flip's gradient is ``grad.flip(dims)`` (FlipBackward0), not a scatter."""

    def scenario(T: Any) -> Any:
        x = _t(T, [[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]], True)
        y = x.flip([1]).log_softmax(-1)
        go = T.ones(2, 3, dtype=T.float64, requires_grad=True)
        (g,) = _grad(T, y, [x], go * 2, create_graph=True)
        return _graphs(g), g

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("dim", [0, [0], (0, 1), [1, 0], None, ()])
def test_amax_of_an_empty_tensor_names_the_empty_dim(dim: Any) -> None:
    """Seed 8030: a named dim, even every dim, is checked for size (IndexError); only a
    missing dim is "to be specified"."""

    def scenario(T: Any) -> Any:
        x = T.zeros(0, 3, dtype=T.float64)
        out = []
        for op in ("amax", "amin"):
            f = getattr(x, op)
            try:
                out.append(tuple((f() if dim is None else f(dim)).shape))
            except (IndexError, RuntimeError) as exc:  # IndexError: not in outcome()
                out.append((error_kind(exc), str(exc)))
        return out

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("reduce", ["mean", "mean0", "sum0"])
def test_reduction_gradient_density_is_torchs(reduce: str) -> None:
    """Seed 9152: mean's gradient is an expand then a division, a dense tensor a user may
    write into; sum's is the expand itself, which refuses the write, as in PyTorch."""

    def scenario(T: Any) -> Any:
        x = _t(T, [0.42], True)
        e = x.expand(2, 1)
        y = {"mean": e.mean(), "mean0": e.mean(0), "sum0": e.sum(0)}[reduce]
        (g,) = _grad(T, y.sum(), [e])

        def write() -> Any:
            with T.no_grad():
                return g.relu_().detach().clone()

        return outcome(write)[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- what a node saves: a second backward or an in-place write succeeds where torch's
# -- node saves nothing the write touches (issue 15) -----------------------------------------

_FACTOR_OPS = {
    "addmv": [(2,), (2, 2), (2,)],
    "addmm": [(2, 2), (2, 2), (2, 2)],
    "baddbmm": [(1, 2, 2), (1, 2, 2), (1, 2, 2)],
    "addbmm": [(2, 2), (1, 2, 2), (1, 2, 2)],
    "addr": [(2, 2), (2,), (2,)],
    "addcmul": [(2,), (2,), (2,)],
    "addcdiv": [(2,), (2,), (2,)],
}


@pytest.mark.parametrize("op", list(_FACTOR_OPS))
@pytest.mark.parametrize("needs", ["100", "110", "101", "011", "111"])
def test_add_products_save_what_torch_saves(op: str, needs: str) -> None:
    """Each subset of inputs requiring grad: backward twice, and an in-place write on each
    input before backward, fail exactly where torch's derivatives.yaml reads the input."""

    def run(T: Any, written: int | None) -> Any:
        xs = [
            T.tensor(np.arange(1.0, 1 + np.prod(s)).reshape(s) + k, requires_grad=n == "1")
            for k, (s, n) in enumerate(zip(_FACTOR_OPS[op], needs))
        ]
        y = getattr(T, op)(*xs).sum()

        def go() -> Any:
            if written is None:
                y.backward(retain_graph=False)
                y.backward()
            else:
                with T.no_grad():
                    xs[written].add_(1)
                y.backward()
            return [_g(x) for x in xs]

        return outcome(go)

    ours, ref = both(lambda T: [run(T, w) for w in (None, 0, 1, 2)])
    assert_values(ours, ref)


@pytest.mark.parametrize("equation", ["ii", "ii->i", "ij->ji", "ij->j"])
def test_einsum_of_one_operand_saves_nothing(equation: str) -> None:
    """einsum("ii") is a diagonal and a sum in torch: nothing saved, so a second backward
    and an in-place write on the operand both work."""

    def scenario(T: Any) -> Any:
        a = _t(T, [[1.0, 2.0], [3.0, 4.0]], True)
        y = T.einsum(equation, a).sum()
        y.backward()
        y.backward()
        b = _t(T, [[1.0, 2.0], [3.0, 4.0]], True) * 1
        z = T.einsum(equation, b).sum()
        with T.no_grad():
            b.mul_(3)
        z.backward()
        return _g(a), fn_name(T.einsum(equation, a))

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("size", [1, 2])
def test_adaptive_avg_pool1d_saves_as_torch(size: int) -> None:
    """adaptive_avg_pool1d to one element is torch's mean (nothing saved); to more, its
    AdaptiveAvgPool2DBackward0 saves the input."""

    def scenario(T: Any) -> Any:
        def twice() -> Any:
            a = T.tensor(np.arange(8.0).reshape(1, 2, 4), requires_grad=True)
            y = T.nn.functional.adaptive_avg_pool1d(a, size).sum()
            y.backward()
            y.backward()
            return _g(a)

        def written() -> Any:
            a = T.tensor(np.arange(8.0).reshape(1, 2, 4), requires_grad=True)
            y = T.nn.functional.adaptive_avg_pool1d(a, size)
            with T.no_grad():
                a.add_(1)
            y.sum().backward()
            return _g(a), node_name(y.grad_fn.next_functions[0][0])

        return outcome(twice), outcome(written)

    ours, ref = both(scenario)
    assert_values(ours, ref)


_EXPLICIT_DEFAULTS = {
    "round": lambda T, x: T.round(x),
    "round decimals=0": lambda T, x: T.round(x, decimals=0),
    "method round decimals=0": lambda T, x: x.round(decimals=0),
    "round decimals=1": lambda T, x: T.round(x, decimals=1),
    "div": lambda T, x: T.div(x, 2.0),
    "div rounding_mode=None": lambda T, x: T.div(x, 2.0, rounding_mode=None),
    "method div rounding_mode=None": lambda T, x: x.div(x.detach() + 1, rounding_mode=None),
    "div floor": lambda T, x: T.div(x, 2.0, rounding_mode="floor"),
    "sort": lambda T, x: T.sort(x)[0],
    "sort stable=False": lambda T, x: T.sort(x, stable=False)[0],
    "sort stable=True": lambda T, x: x.sort(stable=True)[0],
}


@pytest.mark.parametrize("case", list(_EXPLICIT_DEFAULTS))
def test_grad_fn_name_when_a_default_is_given(case: str) -> None:
    """PyTorch picks another overload, so another grad_fn, when an argument is passed
    at all, even as its default value (``round(decimals=0)`` is RoundBackward1)."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.5, -2.25, 0.5], True)
        y = _EXPLICIT_DEFAULTS[case](T, x)
        y.sum().backward()
        return fn_name(y), y.detach(), _g(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("decimals", [None, 0, 1])
def test_round_of_integers_refused_once_decimals_given(decimals: int | None) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1, 2])
        return outcome(lambda: T.round(x) if decimals is None else T.round(x, decimals=decimals))

    ours, ref = both(scenario)
    assert ours[0] == ref[0]
    if ref[0] == "error":
        assert str(ours[1]) == str(ref[1])
    else:
        assert ours[1].tolist() == ref[1].tolist()


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
def test_pad_backward_reads_the_input_as_torch(mode: str) -> None:
    """Reflection and replication pads' backward kernels take the input: torch saves it
    (an in-place write before backward is refused) and a create_graph gradient requires
    grad through it (zero derivative), even when the grad_output is a constant."""

    def scenario(T: Any) -> Any:
        F = T.nn.functional
        x = T.tensor(np.arange(8.0).reshape(1, 2, 4), requires_grad=True)
        w = T.tensor(np.arange(14.0).reshape(1, 2, 7))
        y = F.pad(x, (1, 2), mode=mode)
        grad = T.autograd.grad if T is torch else T.grad
        (gx,) = grad((y * w).sum(), [x], create_graph=True)
        facts = [gx.detach(), gx.requires_grad]

        def written() -> Any:
            h = x * 1
            z = F.pad(h, (1, 2), mode=mode)
            with T.no_grad():
                h.add_(1)
            z.sum().backward()
            return _g(x)

        return facts, outcome(written)

    ours, ref = both(scenario)
    assert_values(ours, ref)


_COPIES = {
    "permute_copy": lambda T, a: T.permute_copy(a, (1, 0)),
    "t_copy": lambda T, a: T.t_copy(a),
    "transpose_copy": lambda T, a: T.transpose_copy(a, 0, 1),
    "expand_copy": lambda T, a: T.expand_copy(a[:1], (3, 2)),
    "diagonal_copy": lambda T, a: T.diagonal_copy(a),
    "unsqueeze_copy": lambda T, a: T.unsqueeze_copy(a, 0),
    "squeeze_copy": lambda T, a: T.squeeze_copy(a[:1]),
    "alias_copy": lambda T, a: T.alias_copy(a),
    "narrow_copy": lambda T, a: T.narrow_copy(a, 0, 1, 2),
}


@pytest.mark.parametrize("op", list(_COPIES))
def test_copy_ops_save_nothing(op: str) -> None:
    """The fuzzer's catalogue move (permute_copy, t_copy): a ``*_copy`` op's node, like
    the view's, saves no tensor: its input may be written in place before backward, and
    a second backward works."""

    def scenario(T: Any) -> Any:
        a = T.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
        h = a.clone()  # CloneBackward0 saves nothing either
        y = _COPIES[op](T, h)
        with T.no_grad():
            h.mul_(2)
        w = T.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape))
        (y * w).sum().backward()
        (y * w).sum().backward()
        return _g(a), fn_name(y)

    ours, ref = both(scenario)
    assert_values(ours, ref)


_NORMS = {
    "batch_norm": lambda T, x, w, b: T.nn.functional.batch_norm(
        x, T.zeros(3, dtype=x.dtype), T.ones(3, dtype=x.dtype), w, b, training=True
    ),
    "batch_norm eval": lambda T, x, w, b: T.nn.functional.batch_norm(
        x, T.zeros(3, dtype=x.dtype), T.ones(3, dtype=x.dtype), w, b
    ),
    "layer_norm": lambda T, x, w, b: T.nn.functional.layer_norm(x, [3], w, b),
    "instance_norm": lambda T, x, w, b: T.nn.functional.instance_norm(x, weight=w, bias=b),
}


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("norm", list(_NORMS))
def test_norm_double_backward_defines_only_real_gradients(norm: str, which: int) -> None:
    """Seed 5607 (batch_norm, grad of the weight with create_graph, then backward): the
    fused double backward op (NativeBatchNormBackwardBackward0, ...) gives no gradient
    to an input its output does not depend on (the bias always; the weight from the
    weight's or the bias's gradient; the input in evaluation): ``.grad`` stays None."""

    def scenario(T: Any) -> Any:
        rng = np.random.default_rng(7)
        x = _t(T, rng.standard_normal((2, 3, 3)), True)
        w, b = _t(T, rng.standard_normal(3), True), _t(T, rng.standard_normal(3), True)
        go = _t(T, rng.standard_normal((2, 3, 3)), True)
        out = _NORMS[norm](T, x, w, b)
        grad = T.autograd.grad if T is torch else T.grad
        grads = grad(out, [x, w, b], go, create_graph=True)
        (
            grads[which]
            * _t(T, np.linspace(-1, 1, grads[which].numel()).reshape(grads[which].shape))
        ).sum().backward()
        # instance_norm's names differ (torch views and sums around the fused op)
        names = [fn_name(g) for g in grads] if norm != "instance_norm" else []
        return names, _g(x), _g(w), _g(b), _g(go)

    ours, ref = both(scenario)
    assert_values(ours, ref, atol=1e-9)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("op", ["batch_norm", "instance_norm"])
def test_batch_norm_infinite_weight_values(op: str, training: bool) -> None:
    """Seed 342 (log2 of a sample squared as native_batch_norm's weight): PyTorch's CPU
    kernel computes ``x * (invstd * w) + (b - mean * invstd * w)``, so an infinite
    weight gives NaN where the two terms are opposite infinities."""

    def scenario(T: Any) -> Any:
        xs = np.random.default_rng(1).standard_normal((2, 3, 4))
        xs[0, 2, 1] = np.inf
        x = _t(T, xs)
        w, b = _t(T, [np.inf, -np.inf, np.nan]), _t(T, [1.0, -2.0, 0.5])
        if op == "instance_norm":
            return T.nn.functional.instance_norm(x, weight=w, bias=b)
        rm, rv = _t(T, [0.5, -1.0, 0.0]), _t(T, [2.0, 0.5, 1.0])
        return T.nn.functional.batch_norm(x, rm, rv, w, b, training=training)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_kron_saves_reshaped_copies_not_its_inputs() -> None:
    """Seed 1181 (kron, then an input written in place under no_grad, then backward):
    torch's kron multiplies ``_unsafe_view`` reshapes of its inputs, which share their
    memory but not their version counter: the backward succeeds and reads the written
    values; the graph is still freed after it."""

    def scenario(T: Any) -> Any:
        a = _t(T, np.arange(6.0).reshape(2, 3), True)
        b = _t(T, [1.0, -2.0, 3.0, 0.5], True)
        r = T.kron(a, b)
        with T.no_grad():
            b.mul_(2)
        w = _t(T, np.linspace(-1, 1, r.numel()).reshape(r.shape))
        first = outcome(lambda: (r * w).sum().backward())[0]
        second = outcome(lambda: (r * w).sum().backward())
        return first, second[0], error_kind(second[1]), _g(a), _g(b), fn_name(r)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_ctc_loss_create_graph_gradient_refuses_double_backward(
    batched: bool, reduction: str
) -> None:
    """Seeds 32, 1520 (ctc_loss, grad with create_graph): PyTorch's gradient is the
    output of _ctc_loss_backward, which has no derivative: it requires grad, its grad_fn
    is NotImplemented, and a backward through it raises."""

    def scenario(T: Any) -> Any:
        rng = np.random.default_rng(0)
        lp = _t(T, rng.standard_normal((5, 2, 3) if batched else (5, 3)), True)
        if batched:
            tg, il, tl = T.tensor([[1, 2], [1, 1]]), T.tensor([5, 5]), T.tensor([2, 2])
        else:
            tg, il, tl = T.tensor([1, 2]), T.tensor(5), T.tensor(2)
        out = T.nn.functional.ctc_loss(lp, tg, il, tl, reduction=reduction)
        grad = T.autograd.grad if T is torch else T.grad
        (g,) = grad(out.sum(), [lp], create_graph=True)
        again = outcome(lambda: g.sum().backward())
        return g, g.requires_grad, fn_name(g), again[0], str(again[1])

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_rot90_saves_nothing() -> None:
    """Seed 1765 (rot90, grad through it without retain_graph, then a backward that
    passes its node again): torch's Rot90Backward0 saves no tensor, so the freed node
    still runs, and a write to its input does not invalidate it."""

    def scenario(T: Any) -> Any:
        x = _t(T, np.arange(6.0).reshape(2, 3), True)
        h = x * 1
        r = T.rot90(h, 1, (0, 1))
        w = _t(T, np.linspace(-1, 1, 6).reshape(3, 2))
        (r * w).sum().backward()
        with T.no_grad():
            h.mul_(2)
        second = outcome(lambda: (r * w).sum().backward())[0]
        return second, _g(x), fn_name(r)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("b_shape", [(3, 2), (2, 3, 2)])
def test_triangular_solve_copy_only_gives_b_zeros(b_shape: tuple[int, ...]) -> None:
    """Seeds 2983, 3071 (backward from triangular_solve's copy of A alone): PyTorch's
    triangular_solve_backward fills b's gradient with zeros (not undefined)."""

    def scenario(T: Any) -> Any:
        rng = np.random.default_rng(2)
        b = _t(T, rng.standard_normal(b_shape), True)
        a = _t(T, np.triu(rng.standard_normal((2, 3, 3))) + 3 * np.eye(3), True)
        with warnings.catch_warnings():  # deprecated (torch warns once per process)
            warnings.simplefilter("ignore")
            _, m = T.triangular_solve(b, a)
        (m * _t(T, np.linspace(-1, 1, m.numel()).reshape(m.shape))).sum().backward()
        return _g(b), _g(a)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_pairwise_distance_saves_no_input() -> None:
    """Seed 2847 (pairwise_distance, x1 written in place under no_grad, backward): torch's
    nodes save ``x1 - x2 + eps`` and the norm, so the backward still runs, with the
    values of the forward."""

    def scenario(T: Any) -> Any:
        rng = np.random.default_rng(4)
        a, b = _t(T, rng.standard_normal((3, 4)), True), _t(T, rng.standard_normal(4), True)
        d = T.nn.functional.pairwise_distance(a, b)
        with T.no_grad():
            a.add_(b)
        d.backward(_t(T, [1.0, -2.0, 0.5]))
        return _g(a), _g(b), fn_name(d)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("op", ["_batch_norm_with_update", "native_batch_norm"])
def test_batch_norm_with_update_double_backward_name(op: str) -> None:
    """Seed 2113: ``_batch_norm_with_update``'s create_graph gradients are recorded as
    its backward op, BatchNormBackwardBackward0 (native_batch_norm's are
    NativeBatchNormBackwardBackward0)."""

    def scenario(T: Any) -> Any:
        rng = np.random.default_rng(5)
        x, w = _t(T, rng.standard_normal((2, 3, 2)), True), _t(T, rng.standard_normal(3), True)
        rm, rv = _t(T, np.zeros(3)), _t(T, np.ones(3))
        f = getattr(T.ops.aten, op) if T is torch else getattr(T, op)
        if op == "native_batch_norm":
            out = f(x, w, None, rm, rv, True, 0.1, 1e-5)[0]
        else:
            out = f(x, w, None, rm, rv, 0.1, 1e-5)[0]
        grad = T.autograd.grad if T is torch else T.grad
        gx, gw = grad(out, [x, w], _t(T, np.ones((2, 3, 2))), create_graph=True)
        return fn_name(out), fn_name(gx), fn_name(gw)

    ours, ref = both(scenario)
    assert_values(ours, ref)
