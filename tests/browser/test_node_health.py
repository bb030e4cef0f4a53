"""A node's health layers and its last diagnosis in a real browser: an admin chooses a real node
bundle's files (tests/data/ops/bundles/xid79-fallen-off-bus: a GPU that fell off the PCIe bus), the
page reads them, the service diagnoses them (ops.diagnose), and the node page names the layer."""

from __future__ import annotations

from pathlib import Path

from chrome import axe_violations, console_errors, screenshot
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from test_dashboard import live, sign_in_as, wait

BUNDLE = Path(__file__).resolve().parents[1] / "data" / "ops" / "bundles" / "xid79-fallen-off-bus"


def test_an_admin_attaches_a_bundle_and_the_node_page_names_the_failed_layer(
        browser, server, artifacts) -> None:
    sign_in_as(browser, server, server.admin)
    node = server.nodes[1]
    browser.get(f"{server.url}/nodes/{node}")
    live(browser)
    assert browser.find_element(By.CSS_SELECTOR, "[data-k=no-diagnosis]").text.startswith("None attached")
    # a decision refreshes the live panel; what the admin is typing stays
    browser.find_element(By.ID, "diag-result").send_keys('{"layer": ')
    panel = browser.find_element(By.ID, "node-panel")
    server.submit("diag-refresh", "interns", pods=1, gpus=1, run_time=60)
    wait(browser, 30).until(EC.staleness_of(panel))     # the live refresh swapped the panel
    assert browser.find_element(By.ID, "diag-result").get_attribute("value") == '{"layer": '
    browser.find_element(By.ID, "diag-result").clear()
    files = "\n".join(str(p) for p in sorted(BUNDLE.iterdir()))
    browser.find_element(By.ID, "diag-files").send_keys(files)
    wait(browser).until(lambda b: b.find_element(By.ID, "diag-bundle").get_attribute("value"))
    browser.find_element(By.ID, "do-diagnosis").click()
    done = wait(browser, 30).until(EC.visibility_of_element_located((By.ID, "action-done")))
    assert "diagnosis attached (hardware pci: GPU fell off the PCIe bus)" in done.text
    row = browser.find_element(By.CSS_SELECTOR, "#layers tr[data-layer=driver]")
    assert row.get_attribute("data-state") == "fault" and "fell off the PCIe bus" in row.text
    assert browser.find_element(By.CSS_SELECTOR, "#layers tr[data-layer=toolkit]").get_attribute(
        "data-state") == "collateral"
    assert browser.find_element(By.CSS_SELECTOR, "[data-k=diag-action]").text == "reboot"
    screenshot(browser, artifacts, "node-diagnosis")
    assert console_errors(browser) == []
    assert axe_violations(browser) == []
    with server.api(server.viewer) as c:
        health = c.get(f"/api/v1/nodes/{node}/health").json()
    assert health["last_diagnosis"]["how"] == "bundle" and health["last_diagnosis"]["diagnosis"]["layer"] == (
        "hardware_pci")
