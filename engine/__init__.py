"""gradserve's engine: reverse-mode autodiff on numpy with PyTorch's semantics.

from engine import tensor, no_grad
x = tensor([1.0, 2.0], requires_grad=True)
(x ** 2).backward(tensor([1.0, 1.0]))
x.grad  # tensor([2., 4.])
"""

from . import methods as _methods
from . import ops as _ops  # noqa: F401  (fills the registry)
from .anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .autograd import backward, grad
from .creation import tensor
from .dtypes import bool_, float32, float64, int64
from .errors import EngineError
from .function import Function, Node
from .functional import hessian, jacobian, jvp, vjp
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .random import Generator, default_generator, manual_seed
from .registry import OPS
from .tensor import NONLEAF_GRAD_WARNING, Tensor
from .utilities import *  # noqa: F403 - torch's dtype names and helpers (is_tensor, numel ...)
from .version import __version__

_methods.bind()
globals().update({name: spec.fn for name, spec in OPS.items() if name not in globals()})
from . import fft as fft  # noqa: E402 - torch.fft (its real-valued part)
from . import func as func  # noqa: E402 - torch.func (grad, vjp, jacrev, vmap, ...)
from . import linalg as linalg  # noqa: E402 - torch.linalg (after the registry is full)
from . import masked as masked  # noqa: E402 - torch.masked (dense tensors)
from . import nn as nn  # noqa: E402 - torch.nn.functional
from . import signal as signal  # noqa: E402 - torch.signal.windows
from . import special as special  # noqa: E402 - torch.special

__all__ = [
    "__version__",
    "OPS",
    "NONLEAF_GRAD_WARNING",
    "EngineError",
    "Function",
    "Generator",
    "GradcheckError",
    "Node",
    "Tensor",
    "backward",
    "default_generator",
    "manual_seed",
    "bool_",
    "enable_grad",
    "float32",
    "float64",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "hessian",
    "jacobian",
    "jvp",
    "vjp",
    "inference_mode",
    "int64",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_grad_enabled",
    "tensor",
    *sorted(OPS),
]
