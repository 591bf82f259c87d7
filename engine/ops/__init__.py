"""Op modules; importing this package fills the registry (one import per line,
so engineers adding modules never edit the same line)."""

# ruff: noqa: F401, I001
from . import arithmetic
from . import compare
from . import elementwise
from . import reduction
from . import shape
from . import indexing
from . import loss
from . import linalg
from . import creation_ops
from . import products
from . import norm
from . import attention
from . import random_ops
from . import rearrange
from . import cumulative
from . import ordering
from . import scatter
from . import decompositions
from . import conv
from . import pooling
from . import resample
from . import special
from . import activations
from . import aliases
from . import composites
from . import gamma
from . import splits
from . import composed
from . import copies
from . import fft
from . import polynomials
from . import statistics
from . import masked
from . import bessel
from . import windows
from . import mathfns
from . import linalg_solvers
from . import linalg_spectral
from . import lu
from . import resample_aten
from . import pooling3d
from . import conv_transpose3d
from . import nn_composites
from . import sum_to
