"""PyTorch autograd, understanding the heart of PyTorch's magic (a notebook), against gradserve.

Leaf flags, z = x**3, weighted backward, gradients accumulating over retained
graphs, the error of a second backward, and one row of a Jacobian at a time.

    python examples/tutorials/02_autograd_heart.py --url http://127.0.0.1:8000
    python examples/tutorials/02_autograd_heart.py --torch   # the same in PyTorch
"""

from typing import Any

from _runner import grad_fn, run


def tutorial(T: Any) -> None:
    x = T.tensor(1.0, requires_grad=True)
    y = T.tensor(2.0)
    z = x * y
    for t, name in zip([x, y, z], "xyz"):
        print(
            f"{name}\ndata: {t.data}\nrequires_grad: {t.requires_grad}\n"
            f"grad: {t.grad}\ngrad_fn: {grad_fn(t)}\nis_leaf: {t.is_leaf}\n"
        )

    x = T.tensor(1.0, requires_grad=True)
    z = x**3
    z.backward()  # computes dz/dx
    print(x.grad.data)  # 3

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    y.backward(T.tensor([1.0, 1.0]))  # the tensor given to backward acts as a weight
    print(x.grad)

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    y.backward(x)  # x as the weights: [2., 8.], not the derivative
    print(x.grad)

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    z = y**3
    w = T.tensor([1.0, 1.0])
    z.backward(w, retain_graph=True)
    print(y.grad)  # None: y is not a leaf
    print(x.grad)
    z.backward(w, retain_graph=True)
    print(x.grad)  # accumulated

    x = T.tensor([2.0, 2.0], requires_grad=True)
    z = T.tensor([4.0, 4.0], requires_grad=True)
    y = x**2 + z**3  # dy/dx = 2x, dy/dz = 3z^2
    w = T.tensor([1.0, 1.0])
    y.backward(w)
    print(x.grad)
    print(z.grad)
    try:
        y.backward(w)
    except RuntimeError:
        print("Trying backward a second time when buffers are empty")

    x = T.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    z = 2 * x
    for row in ([[1.0, 0.0, 0.0, 0.0]], [[0.0, 1.0, 0.0, 0.0]], [[1.0, 1.0, 1.0, 1.0]]):
        z.backward(T.tensor(row), retain_graph=True)
        print(x.grad.data)
        x.grad.data.zero_()  # or it accumulates


if __name__ == "__main__":
    run(tutorial, __doc__)
