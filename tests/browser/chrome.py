"""Debian's headless Chromium driven by selenium, for the dashboard's browser tests.

Why these flags: ``--no-sandbox`` because the tests run as root in CI containers (Chromium refuses
its sandbox as root); ``--disable-gpu`` because there is no display GPU; the ``--disable-*``
network switches and ``--no-first-run`` keep the browser from calling home, so any request a page
makes is one of ours. The driver is the explicit ``/usr/bin/chromedriver`` from the same Debian
source package as the browser: selenium's own manager would try to download one.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-first-run",
    "--no-default-browser-check",
    "--window-size=1400,1000",
    "--force-device-scale-factor=1",
)


def missing_browser() -> str | None:
    """Why the browser cannot start here, or None when both binaries are present."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.exists(path) or shutil.which(path)):
            return f"{path} is missing (run tools/browser-deps.sh as root)"
    return None


def start_chrome(timezone: str = "Europe/Paris") -> webdriver.Chrome:
    """One headless Chromium with its console log readable (``get_log('browser')``).

    The time zone is set to one that is not UTC so that the pages' "local time" is visibly local.
    """
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    env = dict(os.environ, TZ=timezone)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER, env=env), options=options)
    driver.set_page_load_timeout(30)
    return driver


@dataclass(frozen=True)
class ConsoleEntry:
    level: str
    message: str


def console_errors(driver: webdriver.Chrome) -> list[ConsoleEntry]:
    """The console's errors since the last call (reading the log empties it)."""
    return [ConsoleEntry(e["level"], e["message"]) for e in driver.get_log("browser")
            if e["level"] == "SEVERE"]


def paint_timings(driver: webdriver.Chrome) -> dict[str, float]:
    """The page's first-paint and first-contentful-paint times in ms, from Chromium's Paint Timing."""
    entries = driver.execute_script(
        "return JSON.stringify(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]))")
    return {name: float(t) for name, t in json.loads(entries)}


def screenshot(driver: webdriver.Chrome, directory: Path, name: str) -> Path:
    """Save the whole page (not only the window) as ``directory/name.png``."""
    directory.mkdir(parents=True, exist_ok=True)
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(1400, max(1000, min(height + 20, 6000)))
    path = directory / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)
    return path


AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"


def axe_violations(driver: webdriver.Chrome, impacts: tuple[str, ...] = ("serious", "critical")) -> list[str]:
    """axe-core's violations of the given impacts on the current page, one line each
    (rule id, impact, how many elements, the first element's selector)."""
    if not driver.execute_script("return !!window.axe"):
        driver.execute_script(AXE.read_text(encoding="utf-8"))
    driver.set_script_timeout(60)
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(JSON.stringify(r.violations)),"
        " e => done(JSON.stringify([{id: 'axe-error', impact: 'critical', nodes: [], help: String(e)}])));")
    return [f"{v['id']} ({v['impact']}, {len(v['nodes'])} element(s), "
            f"{v['nodes'][0]['target'] if v['nodes'] else v.get('help', '')})"
            for v in json.loads(result) if v.get("impact") in impacts]
