"""Fixtures for the generated-client tests (helpers live in gen_support)."""

from gen_support import server, spec  # noqa: F401 - fixtures
