from __future__ import annotations

import pytest

from service.settings import Settings, get_settings


def test_defaults() -> None:
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (s.host, s.port) == ("127.0.0.1", 8000)
    assert s.api_keys == []
    assert s.access_log is False


def test_environment_prefix_and_comma_separated_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADSERVE_API_KEYS", "alpha, beta,,gamma")
    monkeypatch.setenv("GRADSERVE_MAX_SESSIONS", "7")
    monkeypatch.setenv("GRADSERVE_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("GRADSERVE_ACCESS_LOG", "true")
    s = Settings()
    assert s.api_keys == ["alpha", "beta", "gamma"]
    assert s.max_sessions == 7
    assert s.log_level == "warning"
    assert s.access_log is True


def test_get_settings_is_cached() -> None:
    assert get_settings() is get_settings()
