"""The playground (/ui/) in headless Chromium: presets of the seed tutorials run
through the page, and the numbers read off the page equal PyTorch's.

Each test drives the page as a person would (a preset menu and a button, or the
forms), waits for the page to finish, then reads the tensors table. Screenshots go
to artifacts/browser/. The page must log no console errors, apart from the one
failed request a test provokes on purpose (the second backward's 409).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import numpy as np
import pytest
from browser_support import screenshot

pytestmark = pytest.mark.integration


def _wait(driver: Any, condition: Any, timeout: float = 30) -> Any:
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (NoSuchElementException, StaleElementReferenceException)
    return WebDriverWait(driver, timeout, ignored_exceptions=ignored).until(condition)


def _actions(driver: Any) -> int:
    return int(driver.find_element("tag name", "body").get_attribute("data-actions") or 0)


def _open(driver: Any, server: str) -> str:
    from selenium.webdriver.common.by import By

    driver.get(server + "/ui/")
    _wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
    name = f"pg-{uuid.uuid4().hex[:10]}"
    box = driver.find_element(By.ID, "session-name")
    box.clear()
    box.send_keys(name)
    driver.get_log("browser")  # start the console log afresh
    return name


def _run_preset(driver: Any, key: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, "preset")).select_by_value(key)
    driver.find_element(By.ID, "run-preset").click()
    _wait(driver, lambda d: d.find_element(By.ID, "status").text.startswith("done:"))


def _field(driver: Any, tensor: str, field: str) -> Any:
    from selenium.webdriver.common.by import By

    cell = driver.find_element(
        By.CSS_SELECTOR, f'tr[data-tensor="{tensor}"] td[data-field="{field}"]'
    )
    values = cell.get_attribute("data-values")
    return json.loads(values) if values is not None else cell.text


def _console_errors(driver: Any, allowed: tuple[str, ...] = ()) -> list[str]:
    return [
        e["message"]
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE" and not any(a in e["message"] for a in allowed)
    ]


def test_abc_preset_matches_torch(browser: Any, server: str, torch: Any) -> None:
    _open(browser, server)
    _run_preset(browser, "abc")
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0, 5.0], requires_grad=True)
    c = torch.tensor([6.0, 7.0, 8.0], requires_grad=True)
    y = 3 * a + 2 * b * b + torch.log(c)
    y.backward(torch.tensor([0.1, 1.0, 0.0001]), retain_graph=True)
    for name, leaf in (("a", a), ("b", b), ("c", c)):
        np.testing.assert_allclose(_field(browser, name, "grad"), leaf.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(_field(browser, "y", "value"), y.detach().numpy(), rtol=1e-6)
    assert _field(browser, "y", "grad_fn") == type(y.grad_fn).__name__ == "AddBackward0"
    assert browser.find_element("css selector", "#graph svg") is not None
    screenshot(browser, "playground-abc.png")
    assert _console_errors(browser) == []


def test_retained_backward_preset_matches_torch(browser: Any, server: str, torch: Any) -> None:
    _open(browser, server)
    _run_preset(browser, "retained")
    x = torch.tensor([[-0.7207]], requires_grad=True)
    z = (2 * x) ** 3
    z.backward(retain_graph=True)
    x.grad.zero_()
    z.backward(torch.tensor([[0.1]]), retain_graph=True)
    z.backward(torch.tensor([[0.5]]), retain_graph=True)
    np.testing.assert_allclose(_field(browser, "x", "grad"), x.grad.numpy(), rtol=1e-5)
    assert _field(browser, "z", "grad_fn") == "PowBackward0"
    screenshot(browser, "playground-retained.png")
    assert _console_errors(browser) == []


def test_doubling_loop_and_double_backward_presets(browser: Any, server: str, torch: Any) -> None:
    _open(browser, server)
    _run_preset(browser, "doubling")
    x = torch.tensor([0.5, -1.0, 0.25], requires_grad=True)
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    y.backward(torch.tensor([0.1, 1.0, 0.0001]))
    np.testing.assert_allclose(_field(browser, "x", "grad"), x.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(_field(browser, "y", "value"), y.detach().numpy(), rtol=1e-6)
    _open(browser, server)
    _run_preset(browser, "double")
    np.testing.assert_allclose(_field(browser, "gx", "value"), [3.0, 12.0, 27.0])
    np.testing.assert_allclose(_field(browser, "ggx", "value"), [6.0, 12.0, 18.0])
    screenshot(browser, "playground-double.png")
    assert _console_errors(browser) == []


def test_forms_and_an_error_card(browser: Any, server: str) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, server)

    def fill(form: str, **values: str) -> None:
        el = browser.find_element(By.ID, form)
        for name, value in values.items():
            box = el.find_element(By.NAME, name)
            box.clear()
            box.send_keys(value)
        done = _actions(browser) + 1
        el.find_element(By.TAG_NAME, "button").click()
        _wait(browser, lambda d: _actions(d) >= done)

    fill("leaf-form", name="w", values="[1.0, 2.0, 3.0]")
    fill("step-form", out="loss", expr="(w ** 2).sum()")
    fill("backward-form", tensors="loss", grad_tensors="")
    assert _field(browser, "w", "grad") == [2.0, 4.0, 6.0]
    fill("backward-form", tensors="loss", grad_tensors="")  # the graph was freed
    card = _wait(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, '.error[data-code="graph_freed"]')
    )
    assert "backward through the graph a second time" in card.text
    assert "retain_graph" in card.find_element(By.CLASS_NAME, "hint").text
    assert _field(browser, "w", "grad") == [2.0, 4.0, 6.0]  # a failed backward changes nothing
    screenshot(browser, "playground-error.png")
    assert _console_errors(browser, allowed=("status of 409",)) == []


def test_playground_assets_are_local(server: str) -> None:
    import httpx

    page = httpx.get(server + "/ui/").text
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    for asset in ("playground.js", "playground.css"):
        r = httpx.get(f"{server}/ui/assets/{asset}")
        assert r.status_code == 200 and "https://" not in r.text
    r = httpx.get(f"{server}/ui/assets/../app.py")
    assert r.status_code == 404


def test_log_reads_as_python_with_each_backwards_grads(
    browser: Any, server: str, torch: Any
) -> None:
    """The log: each action as it would be written, and x.grad after each backward (step
    by step, as the seed prints it); the graph's torchviz options toggle both ways."""
    from selenium.webdriver.common.by import By

    _open(browser, server)
    _run_preset(browser, "retained")
    entries = browser.find_elements(By.CSS_SELECTOR, '#log > li[data-kind="backward"]')
    assert [e.find_element(By.TAG_NAME, "code").text for e in entries] == [
        "z.backward(retain_graph=True)",
        "z.backward([[0.1]], retain_graph=True)",
        "z.backward([[0.5]], retain_graph=True)",
    ]
    steps = [
        json.loads(
            e.find_element(By.CSS_SELECTOR, 'li[data-grad="x"]').get_attribute("data-values")
        )
        for e in entries
    ]
    x = torch.tensor([[-0.7207]], requires_grad=True)
    z = (2 * x) ** 3
    expected = []
    for i, g in enumerate((None, [[0.1]], [[0.5]])):
        z.backward(None if g is None else torch.tensor(g), retain_graph=True)
        expected.append(x.grad.numpy().copy())
        if i == 0:
            x.grad.zero_()  # the preset's zero_grad between the first and second backward
    np.testing.assert_allclose(np.array(steps), np.array(expected), rtol=1e-5)
    zero = browser.find_element(By.CSS_SELECTOR, '#log > li[data-kind="zero_grad"] code').text
    assert zero == "x.grad.zero_()"

    def graph_text(d: Any) -> str:
        return d.find_element(By.ID, "graph").get_attribute("innerHTML")

    assert "saved" not in graph_text(browser)
    for box in ("show-saved", "show-accumulate"):
        browser.find_element(By.ID, box).click()
    _wait(browser, lambda d: "saved (1, 1)" in graph_text(d) and "AccumulateGrad" in graph_text(d))
    screenshot(browser, "playground-torchviz-options.png")
    for box in ("show-saved", "show-accumulate"):
        browser.find_element(By.ID, box).click()
    _wait(browser, lambda d: "saved (" not in graph_text(d))
    assert _console_errors(browser) == []


def _heatmap(driver: Any, of: str, wrt: str) -> tuple[np.ndarray, list[Any]]:
    """The heat map's values (rows x cols, read from its cells) and its cells."""
    from selenium.webdriver.common.by import By

    svg = _wait(
        driver,
        lambda d: d.find_element(By.CSS_SELECTOR, f'figure[data-of="{of}"][data-wrt="{wrt}"] svg'),
    )
    rows, cols = int(svg.get_attribute("data-rows")), int(svg.get_attribute("data-cols"))
    cells = svg.find_elements(By.CSS_SELECTOR, "rect.cell")
    grid = np.full((rows, cols), np.nan)
    for c in cells:
        grid[int(c.get_attribute("data-row")), int(c.get_attribute("data-col"))] = float(
            c.get_attribute("data-value")
        )
    assert len(cells) == rows * cols
    return grid, cells


def test_stored_program_and_its_jacobian_heat_map_match_torch(
    browser: Any, server: str, torch: Any
) -> None:
    """The preset stores y = cumsum(x) * sin(x) as a program, runs it, and draws its
    Jacobian: one cell per (output, input) element with the number in its title, red
    for positive, blue for negative, white for zero, equal to torch.func.jacrev."""
    from selenium.webdriver.common.by import By

    _open(browser, server)
    _run_preset(browser, "jacobian")
    x = torch.tensor([0.5, 1.0, 1.5, 2.0, 2.5])
    f = lambda t: t.cumsum(0) * t.sin()  # noqa: E731
    want = torch.func.jacrev(f)(x).numpy()
    grid, cells = _heatmap(browser, "y", "x")
    np.testing.assert_allclose(grid, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_field(browser, "y", "value"), f(x).numpy(), rtol=1e-5)
    by_place = {(c.get_attribute("data-row"), c.get_attribute("data-col")): c for c in cells}
    title = by_place[("3", "1")].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert (
        title.startswith("∂y[3] / ∂x[1] = ")
        and abs(float(title.split("= ")[1]) - want[3, 1]) < 1e-3
    )
    fill = by_place[("0", "4")].get_attribute("fill")  # above the diagonal: zero
    assert fill == "rgb(255,255,255)"
    for (i, j), cell in by_place.items():
        r, _, b = (int(v) for v in cell.get_attribute("fill")[4:-1].split(","))
        v = want[int(i), int(j)]
        assert (r > b) if v > 1e-6 else (b > r) if v < -1e-6 else True
    log = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#log > li code")]
    assert "@program f: 1 steps, reads [x], binds [y], pure" in log
    assert "f.run(repeat=1): 1 iterations" in log
    screenshot(browser, "playground-jacobian.png")
    assert _console_errors(browser) == []


def test_training_program_runs_repeatedly_as_torch(browser: Any, server: str, torch: Any) -> None:
    _open(browser, server)
    _run_preset(browser, "train")
    X = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    Y = torch.tensor([[1.0], [2.0], [3.0]])
    w = torch.tensor([[0.1], [-0.2]], requires_grad=True)
    for _ in range(20):
        loss = ((X @ w - Y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.01 * w.grad
        w.grad.zero_()
    np.testing.assert_allclose(_field(browser, "w", "value"), w.detach().numpy(), rtol=1e-5)
    from selenium.webdriver.common.by import By

    run = browser.find_element(By.CSS_SELECTOR, '#log > li[data-kind="run"] code').text
    assert run.startswith("train.run(repeat=20): 20 iterations; loss = ")
    assert _console_errors(browser) == []


def test_program_forms_and_a_forward_mode_jacobian(browser: Any, server: str, torch: Any) -> None:
    """Typed into the forms: a leaf, a two-line program, a run, and the Jacobian of its
    scalar output in forward mode (one row); an impure program's Jacobian is a 409 card."""
    from selenium.webdriver.common.by import By

    _open(browser, server)

    def fill(form: str, **values: str) -> None:
        el = browser.find_element(By.ID, form)
        for name, value in values.items():
            box = el.find_element(By.NAME, name)
            if box.tag_name == "select":
                from selenium.webdriver.support.ui import Select

                Select(box).select_by_value(value)
                continue
            box.clear()
            box.send_keys(value)
        done = _actions(browser) + 1
        el.find_element(By.TAG_NAME, "button").click()
        _wait(browser, lambda d: _actions(d) >= done)

    fill("leaf-form", name="x", values="[1.0, 2.0, 3.0]")
    fill("program-form", name="g", steps="y = x * x\nz = (y * x.exp()).sum()", fetch="z")
    fill("run-form", program="g", repeat="3")
    fill("jacobian-form", program="g", of="z", wrt="x", mode="fwd")
    x = torch.tensor([1.0, 2.0, 3.0])
    want = torch.func.jacfwd(lambda t: (t * t * t.exp()).sum())(x).numpy()
    grid, _ = _heatmap(browser, "z", "x")
    assert grid.shape == (1, 3)
    np.testing.assert_allclose(grid[0], want, rtol=1e-5)
    fill("program-form", name="h", steps="x = x + 1", fetch="")
    browser.find_element(By.CSS_SELECTOR, "#program-form textarea").clear()
    fill("program-form", name="h", steps='{"out": "x", "expr": "x * 2", "assign": true}')
    fill("jacobian-form", program="h", of="x", wrt="x", mode="rev")
    _wait(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, '.error[data-code="program_not_pure"]')
    )
    assert _console_errors(browser, allowed=("status of 409",)) == []
