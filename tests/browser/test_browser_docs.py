"""What a person sees, in headless Chromium, offline: Swagger UI's "Try it out", ReDoc,
and the graph view. Screenshots go to artifacts/browser/."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from browser_support import screenshot

from client import Session

pytestmark = pytest.mark.integration

WAIT = 60  # seconds; a loaded 2-core CI machine renders Swagger UI slowly


def _wait(driver: Any) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT)


def _local_scripts(driver: Any, server: str) -> None:
    """Fail early, with the reason, when a page is missing or would need a CDN."""
    from selenium.webdriver.common.by import By

    text = driver.execute_script("return document.body ? document.body.innerText : ''") or ""
    assert not text.lstrip().startswith('{"type":"urn:gradserve:problem:'), text[:300]
    sources = [e.get_attribute("src") for e in driver.find_elements(By.TAG_NAME, "script")]
    foreign = [u for u in sources if u and not u.startswith(server)]
    assert not foreign, f"the page loads scripts from outside the server: {foreign}"


def _offline_checks(driver: Any, server: str, *, assets: bool = True) -> None:
    """Every resource the page loaded came from the server; no console errors."""
    urls = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert bool(urls) == assets, urls
    foreign = [u for u in urls if not u.startswith(server) and not u.startswith("data:")]
    assert not foreign, f"loaded from outside the server: {foreign}"
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def test_swagger_ui_try_it_out_runs_a_call(browser: Any, server: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC

    driver = browser
    driver.get(f"{server}/docs")
    _local_scripts(driver, server)
    wait = _wait(driver)
    op_id = "operations-sessions-createSession"
    op = wait.until(EC.presence_of_element_located((By.ID, op_id)))
    assert "gradserve" in driver.title
    op.find_element(By.CSS_SELECTOR, ".opblock-summary").click()  # expand
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, f"#{op_id} .try-out__btn"))).click()
    body = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"#{op_id} textarea")))
    assert '"name"' in body.get_attribute("value")  # prefilled from the schema's example
    name = f"browser-{uuid.uuid4().hex[:8]}"
    body.send_keys(Keys.CONTROL, "a")
    body.send_keys(Keys.DELETE)
    body.send_keys(f'{{"name": "{name}"}}')
    driver.find_element(By.CSS_SELECTOR, f"#{op_id} .execute").click()
    status = wait.until(
        EC.visibility_of_element_located(
            (By.CSS_SELECTOR, f"#{op_id} .live-responses-table tr.response .response-col_status")
        )
    )
    answer = driver.find_element(
        By.CSS_SELECTOR, f"#{op_id} .live-responses-table tr.response .response-col_description pre"
    ).text
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", status)
    screenshot(driver, "docs-try-it-out.png")
    assert status.text.strip() == "201", answer
    assert f'"name": "{name}"' in answer
    _offline_checks(driver, server)
    with Session(server, name=name, create=False) as s:  # the call really ran
        assert s.info()["tensor_count"] == 0
        s.delete()


def test_redoc_renders_offline(browser: Any, server: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    driver = browser
    driver.get(f"{server}/redoc")
    _local_scripts(driver, server)
    wait = _wait(driver)
    heading = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "h1")))
    assert "gradserve" in heading.text
    wait.until(
        EC.presence_of_element_located(
            (By.XPATH, "//*[@role='menuitem']//*[contains(text(), 'Backward')]")
        )
    )
    screenshot(driver, "redoc.png")
    _offline_checks(driver, server)


@pytest.fixture
def graph_session(server: str) -> Any:
    """x, w leaves; y = x**2, z = y**3, out = z.sum() + (w*x).sum(); out.backward() without
    retain_graph, so the nodes that saved tensors are freed."""
    with Session(server, name=f"graph-{uuid.uuid4().hex[:8]}") as s:
        s.tensor([1.0, 2.0], requires_grad=True, name="x")
        s.tensor([0.5, -1.0], requires_grad=True, name="w")
        s.expr("x ** 2", name="y")
        s.expr("y ** 3", name="z")
        s.expr("z.sum() + (w * x).sum()", name="out").backward()
        yield s
        s.delete()


def _check_drawing(driver: Any, scope: str) -> int:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    nodes = _wait(driver).until(
        EC.presence_of_all_elements_located((By.CSS_SELECTOR, f"{scope} g.node"))
    )
    names = {n.get_attribute("data-name") for n in nodes}
    assert {"AccumulateGrad", "PowBackward0", "SumBackward0", "AddBackward0"} <= names
    assert "MulBackward0" in names
    leaves = driver.find_elements(By.CSS_SELECTOR, f"{scope} g.node.leaf")
    labels = [
        leaf.find_element(By.CSS_SELECTOR, "text").get_attribute("textContent") for leaf in leaves
    ]
    assert sorted(labels) == ["w", "x"]
    freed = driver.find_elements(By.CSS_SELECTOR, f"{scope} g.node.freed")
    assert len(freed) == 3
    assert all("freed" in f.get_attribute("textContent") for f in freed)
    assert len(driver.find_elements(By.CSS_SELECTOR, f"{scope} path.edge")) == 8
    return len(nodes)


def test_graph_svg_renders(browser: Any, server: str, graph_session: Session) -> None:
    driver = browser
    driver.get(f"{server}/v1/sessions/{graph_session.name}/graph?format=svg")
    root = _wait(driver).until(lambda d: d.execute_script("return document.documentElement"))
    assert root.tag_name == "svg"
    assert _check_drawing(driver, "svg") == 8
    screenshot(driver, "graph-svg.png")


def test_graph_page_draws_the_backward_graph(
    browser: Any, server: str, graph_session: Session
) -> None:
    driver = browser
    driver.get(f"{server}/ui/sessions/{graph_session.name}")
    _local_scripts(driver, server)
    assert _check_drawing(driver, "svg.gradserve-graph") == 8
    screenshot(driver, "graph-page.png")
    assert graph_session.name in driver.title
    _offline_checks(driver, server, assets=False)  # one self-contained page
