"""gradserve's Python client: PyTorch's autograd API against a remote session.

from client import Session
s = Session("http://127.0.0.1:8000", name="demo")
x = s.tensor([1.0, 2.0], requires_grad=True, name="x")
y = x ** 2
y.backward([1.0, 1.0], retain_graph=True)
print(x.grad)              # tensor([2., 4.])
x.grad.zero_()
s.close()                  # unbinds the generated names; the session stays

``AsyncSession`` is the same on ``httpx.AsyncClient`` (building queued, reads and backward
awaited: ``await loss.backward()``, ``await w.numpy()``), for many sessions in one loop.
"""

from . import errors
from .aio import AsyncSession, AsyncTensor
from .errors import GradserveError
from .local import LocalServer
from .session import Session
from .tensor import GradRef, Tensor, TensorData


def __getattr__(name: str) -> str:
    """``client.__version__``, read from the installed metadata when asked (importing
    ``importlib.metadata`` would cost ``import client`` a fifth of numpy's time)."""
    if name == "__version__":
        from gradcore.version import __version__

        return __version__
    raise AttributeError(f"module 'client' has no attribute {name!r}")


__all__ = [
    "__version__",
    "AsyncSession",
    "AsyncTensor",
    "GradRef",
    "GradserveError",
    "LocalServer",
    "Session",
    "Tensor",
    "TensorData",
    "errors",
]
