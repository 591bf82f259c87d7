"""The compute layer: what a session's changes run. Steps and expressions resolved against
a session's bindings and run on the engine (``steps``, ``expr``), the autograd verbs
(``verbs``), batches (``programs``), stored programs compiled once (``compiled``) and
their derivatives (``derivatives``), the backward graph as data (``graph``), and tensors
as bytes (``transfers``). It holds no state: the session layer (``service.session``)
owns the sessions and calls it under their locks; the HTTP layer (``service.routes``)
reaches it only through the session layer's mutation path or to read."""
