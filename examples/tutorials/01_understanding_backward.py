"""Understanding backward() in PyTorch (Linlin's blog), against gradserve.

z = (2x)^3; z.backward() with the default, explicit and scaled grad_tensors;
then a 2x2 x, where grad_tensors picks columns and rows; then a scalar mean.

    python examples/tutorials/01_understanding_backward.py --url http://127.0.0.1:8000
    python examples/tutorials/01_understanding_backward.py --torch   # the same in PyTorch
"""

from typing import Any

from _runner import run


def tutorial(T: Any) -> None:
    T.manual_seed(0)  # the session's generator draws what torch.manual_seed(0) then draws
    x = T.randn(1, 1, requires_grad=True)  # a leaf created by the user: no grad_fn
    print("x", x)
    y = 2 * x
    print("y", y)
    z = y**3
    print("z", z)

    z.backward(retain_graph=True)
    print("Keeping the default value of grad_tensors gives")
    print("z gradient:", z.grad)
    print("y gradient:", y.grad)
    print("x gradient:", x.grad, "Requires gradient?", x.grad.requires_grad)

    for scale in (1.0, 0.1, 0.5):  # grad_tensors scale the gradient
        x.grad.data.zero_()
        z.backward(T.tensor([[scale]]), retain_graph=True)
        print(f"Set grad_tensors to {scale} gives")
        print("x gradient:", x.grad)

    x = T.randn(2, 2, requires_grad=True)
    print("x", x)
    y = 2 * x
    z = y**3
    print("z shape:", list(z.size()))
    z.backward(T.tensor([[1.0, 1.0], [1.0, 1.0]]), retain_graph=True)
    print("x gradient for its all elements:\n", x.grad)
    x.grad.data.zero_()  # the gradient accumulates: clear it
    z.backward(T.tensor([[0.0, 1.0], [0.0, 1.0]]), retain_graph=True)
    print("x gradient for the second column:\n", x.grad)
    x.grad.data.zero_()
    z.backward(T.tensor([[1.0, 1.0], [0.0, 0.0]]), retain_graph=True)
    print("x gradient for the first row:\n", x.grad)

    # a scalar output of a 2x2 x: f(x) = mean((2x)^3), f'(x) = 24 x^2 / n
    x = T.randn(2, 2, requires_grad=True)
    out = ((2 * x) ** 3).mean()
    out.backward()
    print("out", out)
    print("x gradient for the mean:\n", x.grad)


if __name__ == "__main__":
    run(tutorial, __doc__)
