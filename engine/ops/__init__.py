"""Op modules; importing this package fills the registry."""

from . import arithmetic, compare, elementwise, reduction, shape  # noqa: F401
