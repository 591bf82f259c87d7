"""The session layer: named sessions of tensors and every change made to them.

``state`` holds a session's bindings and its all-or-nothing ``Transaction``;
``journal`` keeps sessions durable in one of the ``backends``; ``quotas`` and
``limits`` refuse work before it allocates; ``offload`` decides where the work runs.
The HTTP layer (``service.routes``) calls into it; the compute layer
(``service.compute``: steps, verbs, programs) is what it runs."""
