"""PyTorch's OpInfo database run against the engine (see ``harness``)."""
