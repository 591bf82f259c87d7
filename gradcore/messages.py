"""Messages raised by both the engine and the client, in PyTorch's wording."""

LEAF_INPLACE_MESSAGE = "a leaf Variable that requires grad is being used in an in-place operation."
