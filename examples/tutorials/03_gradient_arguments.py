"""PyTorch, what are the gradient arguments (a question and its answer), against gradserve.

y = 3a + 2b^2 + log(c): backward with weights, at a point, at c = 0 (an
infinite gradient), and twice with retain_graph (the gradients add up).

    python examples/tutorials/03_gradient_arguments.py --url http://127.0.0.1:8000
    python examples/tutorials/03_gradient_arguments.py --torch   # the same in PyTorch
"""

from typing import Any

from _runner import run


def tutorial(T: Any) -> None:
    # Example 1: the gradients are weights of a vector-Jacobian product
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = T.tensor([3.0, 4.0, 5.0], requires_grad=True)
    c = T.tensor([6.0, 7.0, 8.0], requires_grad=True)
    y = 3 * a + 2 * b * b + T.log(c)
    gradients = T.tensor([0.1, 1.0, 0.0001])
    y.backward(gradients, retain_graph=True)
    print(a.grad)  # tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])
    print(b.grad)  # tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])
    print(c.grad)  # tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])

    # Example 2: a scalar y, no gradient argument: the derivative at a point
    a = T.tensor(0.1, requires_grad=True)
    b = T.tensor(1.0, requires_grad=True)
    c = T.tensor(0.1, requires_grad=True)
    y = 3 * a + 2 * b * b + T.log(c)
    y.backward()
    print(a.grad)  # tensor(3.)
    print(b.grad)  # tensor(4.)
    print(c.grad)  # tensor(10.)

    # Example 3: the post's torch.empty values were whatever memory held; these are
    # fixed, with c = 0 where log's derivative is infinite
    a = T.tensor([1.0], requires_grad=True)
    b = T.tensor([0.0], requires_grad=True)
    c = T.tensor([0.0], requires_grad=True)
    y = 3 * a + 2 * b * b + T.log(c)
    y.backward(T.tensor([0.1]))
    print(a.grad)
    print(b.grad)
    print(c.grad)  # tensor([inf])

    # Example 4: gradients accumulate over two backward passes
    a = T.tensor(1.0, requires_grad=True)
    b = T.tensor(1.0, requires_grad=True)
    c = T.tensor(1.0, requires_grad=True)
    y = 3 * a + 2 * b * b + T.log(c)
    y.backward(retain_graph=True)
    y.backward()
    print(a.grad)  # tensor(6.)
    print(b.grad)  # tensor(8.)
    print(c.grad)  # tensor(2.)


if __name__ == "__main__":
    run(tutorial, __doc__)
