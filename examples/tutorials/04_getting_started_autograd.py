"""Getting Started with PyTorch Part 1: how automatic differentiation works, against gradserve.

The post's graph: b = w1*a, c = w2*a, d = w3*b + w4*c, L = 10 - d; the
leaves' gradients, one gradient-descent step, retain_grad on a non-leaf,
requires_grad as a switch, and inference under no_grad.

    python examples/tutorials/04_getting_started_autograd.py --url http://127.0.0.1:8000
    python examples/tutorials/04_getting_started_autograd.py --torch   # the same in PyTorch
"""

from typing import Any

from _runner import grad_fn, run


def tutorial(T: Any) -> None:
    a = T.tensor(2.0, requires_grad=True)
    w1 = T.tensor(0.5, requires_grad=True)
    w2 = T.tensor(-1.5, requires_grad=True)
    w3 = T.tensor(3.0, requires_grad=True)
    w4 = T.tensor(0.25, requires_grad=True)

    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    d.retain_grad()  # keep the gradient of a non-leaf
    L = 10 - d
    print("grad_fn of c:", grad_fn(c), "of d:", grad_fn(d), "of L:", grad_fn(L))

    L.backward()
    for name, w in [("w1", w1), ("w2", w2), ("w3", w3), ("w4", w4), ("a", a)]:
        print(f"dL/d{name}:", w.grad)
    print("dL/dd:", d.grad)

    learning_rate = 0.1
    with T.no_grad():  # w1 = w1 - learning_rate * w1.grad, without recording it
        for w in (w1, w2, w3, w4):
            w -= learning_rate * w.grad
    print("updated weights:", w1, w2, w3, w4)

    # requires_grad as a switch: a frozen (detached) w1 gets no gradient through b now;
    # b still requires grad, since a does (requires_grad is contagious)
    frozen = w1.detach()
    b = frozen * a
    print("b requires grad?", b.requires_grad)
    L = 10 - (w3 * b + w4 * (w2 * a))
    a.grad.data.zero_()
    L.backward()
    print("dL/da with w1 frozen:", a.grad)

    with T.no_grad():  # inference: no graph
        pred = w3 * (w1 * a) + w4 * (w2 * a)
    print("prediction:", pred, "requires grad?", pred.requires_grad, "grad_fn:", grad_fn(pred))


if __name__ == "__main__":
    run(tutorial, __doc__)
