"""How PyTorch's backward() works (Jacobian-vector products), against gradserve.

A scalar's backward is backward(tensor(1.)); a vector output needs the
vector v of the Jacobian-vector product; the doubling loop of PyTorch's own
autograd tutorial, written with .data as tutorials of that time did.

    python examples/tutorials/05_how_backward_works.py --url http://127.0.0.1:8000
    python examples/tutorials/05_how_backward_works.py --torch   # the same in PyTorch
"""

from typing import Any

from _runner import run


def tutorial(T: Any) -> None:
    T.manual_seed(0)  # the session's generator draws what torch.manual_seed(0) then draws
    x = T.randn(3, requires_grad=True)
    y = x.sum()
    y.backward()  # the same as y.backward(torch.tensor(1.))
    print("d(sum)/dx:", x.grad)

    x = T.randn(3, requires_grad=True)
    y = x * 2
    steps = 0
    while y.data.norm() < 1000:
        y = y * 2
        steps += 1
    print("doublings:", steps)
    print("y:", y)
    v = T.tensor([0.1, 1.0, 0.0001])
    y.backward(v)  # the vector-Jacobian product v^T J
    print("x.grad:", x.grad)

    # the external gradient weighs each output, here [0.2, 0.8]
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    z = y * 3
    z.backward(T.tensor([0.2, 0.8]))
    print("weighted x.grad:", x.grad)


if __name__ == "__main__":
    run(tutorial, __doc__)
