"""Debian's headless Chromium driven by selenium, fully offline.

Chromium runs with a fresh profile and a proxy on a dead loopback port: loopback is
never proxied, so the page can reach the test server and nothing else. A page that
needed a CDN would therefore fail here exactly as it would for a user without one.

Skips (with the reason) when chromium or chromedriver is absent, unless CI_BROWSER is
set: then a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = ("chromium", "chromium-browser")
CHROMEDRIVER = ("chromedriver",)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--proxy-server=http://127.0.0.1:9",  # everything but loopback goes nowhere
    "--window-size=1280,1000",
)
INSTALL = "apt-get install -y chromium chromium-driver && pip install selenium"


def _which(names: tuple[str, ...], extra: tuple[str, ...] = ()) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    for path in extra:
        if os.access(path, os.X_OK):
            return path
    return None


def find_browser() -> tuple[str, str]:
    """Paths of chromium and chromedriver, or skip / fail as CI_BROWSER says."""
    missing = []
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    chromium = _which(CHROMIUM, ("/usr/bin/chromium", "/usr/lib/chromium/chromium"))
    driver = _which(CHROMEDRIVER, ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"))
    if chromium is None:
        missing.append("chromium")
    if driver is None:
        missing.append("chromedriver")
    if missing:
        message = f"browser tests need {', '.join(missing)} ({INSTALL})"
        if os.environ.get("CI_BROWSER"):
            pytest.fail(f"CI_BROWSER is set but {message}")
        pytest.skip(message)
    assert chromium is not None and driver is not None
    return chromium, driver


@contextmanager
def chromium_driver() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = find_browser()
    profile = tempfile.mkdtemp(prefix="gradserve-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=driver_path, log_output=os.devnull)
    driver = webdriver.Chrome(options=options, service=service)  # no Selenium Manager lookup
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: object, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    driver.save_screenshot(str(path))  # type: ignore[attr-defined]
    return path
