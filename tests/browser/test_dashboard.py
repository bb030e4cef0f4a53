"""The dashboard in a real browser: headless Debian Chromium against a real ``gpufleet serve``.

The server and its workload are described in conftest.py: three research gangs running, one
256-GPU product gang refused by quota. Each test signs in as the role it needs.
"""

from __future__ import annotations

import pytest
from chrome import axe_violations, console_errors, screenshot
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from gpufleet.service.dashboard.format import duration_words


def sign_in_as(browser, server, token: str) -> None:
    """Sign in afresh (and forget the console of earlier tests: reading the log empties it)."""
    browser.delete_all_cookies()
    browser.get(f"{server.url}/?token={token}")
    console_errors(browser)


def wait(browser, timeout: float = 15) -> WebDriverWait:
    return WebDriverWait(browser, timeout, poll_frequency=0.1)


def live(browser) -> None:
    """Wait until the page's event stream is connected."""
    wait(browser).until(lambda b: b.find_element(By.ID, "live-status").get_attribute("data-state") == "live")


def test_signing_in_with_the_login_form_lands_on_the_overview(browser, server, artifacts) -> None:
    browser.delete_all_cookies()
    browser.get(server.url + "/jobs")
    assert "/login" in browser.current_url
    screenshot(browser, artifacts, "login")
    browser.find_element(By.ID, "token").send_keys(server.viewer)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait(browser).until(EC.url_to_be(server.url + "/jobs"))
    assert "watcher · viewer" in browser.find_element(By.ID, "who").text
    cookie = browser.get_cookie("gpufleet_session")
    assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    assert browser.execute_script("return document.cookie") == "", "page scripts cannot read the session"


def test_the_sign_out_button_ends_the_session_and_an_old_logout_link_does_not(browser, server) -> None:
    """The header's Sign out posts (a same-origin form, as the page's other actions): the browser
    lands on the sign-in page and the next page asks to sign in again. An old /logout link
    (a GET) only lands on the sign-in page, which says who is still signed in."""
    sign_in_as(browser, server, server.viewer)
    browser.get(server.url + "/logout")
    wait(browser).until(EC.url_to_be(server.url + "/login"))
    assert "Signed in as watcher · viewer" in browser.find_element(By.TAG_NAME, "main").text
    browser.get(server.url + "/queues")
    assert browser.current_url == server.url + "/queues"
    browser.find_element(By.ID, "sign-out").click()
    wait(browser).until(EC.url_to_be(server.url + "/login"))
    assert browser.get_cookie("gpufleet_session") is None
    assert "Signed in as" not in browser.find_element(By.TAG_NAME, "main").text
    browser.get(server.url + "/queues")
    assert "/login" in browser.current_url
    assert console_errors(browser) == []


def test_a_token_link_signs_in_and_leaves_no_token_in_the_address_bar(browser, server) -> None:
    sign_in_as(browser, server, server.viewer)
    assert browser.current_url == server.url + "/"
    assert "token" not in browser.current_url


PAGES = [
    pytest.param("/", "overview", id="the overview"),
    pytest.param("/queues", "queues", id="the queues"),
    pytest.param("/jobs", "jobs", id="the jobs table"),
    pytest.param("/jobs?state=pending&sort=gpus&dir=desc", "jobs-pending",
                 id="the pending jobs, largest first"),
    pytest.param("/jobs/product-big", "job-blocked", id="a blocked gang's page"),
    pytest.param("/jobs/research-0", "job-running", id="a running job's page"),
    pytest.param("/nodes", "nodes", id="the fleet map"),
    pytest.param("/nodes/{first_node}", "node", id="a node's page"),
    pytest.param("/history", "history", id="the history charts"),
    pytest.param("/studies", "studies", id="the studies"),
]


@pytest.mark.parametrize(("path", "name"), PAGES)
def test_every_page_renders_real_data_without_console_errors_or_serious_accessibility_faults(
        browser, server, artifacts, path: str, name: str) -> None:
    sign_in_as(browser, server, server.admin)
    console_errors(browser)
    browser.get(server.url + path.format(first_node=server.nodes[0]))
    live(browser)
    assert browser.find_element(By.TAG_NAME, "h1").text
    screenshot(browser, artifacts, name)
    assert console_errors(browser) == []
    assert axe_violations(browser) == []


def test_the_overview_shows_the_blocked_gang_and_never_looks_healthy(browser, server) -> None:
    sign_in_as(browser, server, server.viewer)
    banner = browser.find_element(By.CSS_SELECTOR, "section.banner")
    assert banner.get_attribute("data-tone") != "ok"
    gang = browser.find_element(By.ID, "biggest-gang").text
    assert "product-big" in gang and "256 GPUs, 32 pods, tenant product" in gang


def test_times_are_local_with_a_relative_hint(browser, server) -> None:
    """The browser runs in Europe/Paris (chrome.py): a time reads CET/CEST (or GMT+1/+2), not UTC."""
    sign_in_as(browser, server, server.viewer)
    browser.get(server.url + "/jobs/product-big")
    submitted = browser.find_element(By.CSS_SELECTOR, "ol.timeline time").text
    assert "UTC" not in submitted
    assert any(z in submitted for z in ("CET", "CEST", "GMT+1", "GMT+2"))
    assert "ago" in submitted or "(now)" in submitted


def test_the_pages_script_and_the_server_put_durations_in_the_same_words(browser, server) -> None:
    sign_in_as(browser, server, server.viewer)
    samples = [0, 1, 45, 59, 60, 61, 119, 3599, 3600, 3661, 7800, 86399, 86400, 90061, 273900, 10**7]
    got = browser.execute_script("return arguments[0].map(s => window.gpufleet.durationWords(s))", samples)
    assert got == [duration_words(s) for s in samples]


def test_a_viewer_has_no_admin_buttons_and_a_forged_drain_from_the_page_is_refused(browser, server) -> None:
    sign_in_as(browser, server, server.viewer)
    node = server.nodes[1]
    browser.get(f"{server.url}/nodes/{node}")
    assert browser.find_elements(By.ID, "admin-actions") == []
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(`/nodes/${arguments[0]}/drain`, {method: 'POST', headers: {'HX-Request': 'true'}})"
        ".then(r => done(r.status));", node)
    assert status == 403
    with server.api() as c:
        assert c.get(f"/api/v1/nodes/{node}").json()["state"] == "up"


def test_an_admin_drains_a_node_after_confirming_and_the_map_shows_it_without_a_reload(
        browser, server, artifacts) -> None:
    sign_in_as(browser, server, server.admin)
    node = server.nodes[-1]
    browser.get(f"{server.url}/nodes/{node}")
    live(browser)
    browser.execute_script("window.__noReload = true")
    browser.find_element(By.ID, "btn-drain").click()
    dialog = browser.find_element(By.ID, "confirm-drain")
    wait(browser).until(lambda b: dialog.is_displayed())
    screenshot(browser, artifacts, "drain-confirmation")
    browser.find_element(By.ID, "do-drain").click()
    done = wait(browser).until(EC.visibility_of_element_located((By.ID, "action-done")))
    assert "drain done" in done.text
    with server.api() as c:
        server.wait_for(lambda: c.get(f"/api/v1/nodes/{node}").json()["state"] == "drain", "the drain")
    wait(browser, 30).until(lambda b: b.execute_script(
        "const e = document.querySelector('#node-panel [data-k=state]'); return e ? e.textContent : ''")
        == "drain")
    assert browser.execute_script("return window.__noReload") is True
    browser.find_element(By.ID, "btn-uncordon").click()
    browser.find_element(By.ID, "do-uncordon").click()
    wait(browser).until(EC.visibility_of_element_located((By.ID, "action-done")))


def test_a_submitted_job_appears_in_the_table_without_a_reload(browser, server) -> None:
    sign_in_as(browser, server, server.viewer)
    browser.get(server.url + "/jobs?q=arrives")
    live(browser)
    browser.execute_script("window.__noReload = true")
    assert "0 jobs match" in browser.find_element(By.ID, "job-count").text
    server.submit("arrives-live", "interns", pods=1, gpus=1, run_time=60)
    wait(browser).until(lambda b: "arrives-live" in b.execute_script(
        "return document.getElementById('jobs-table').textContent"))
    assert browser.execute_script("return window.__noReload") is True


def test_a_what_if_on_the_blocked_gang_shows_the_answer_beside_todays(browser, server, artifacts) -> None:
    """product-big (256 GPUs) is refused by product's 64 + 64 borrowable; with a nominal of 256 the
    cohort (96 + 256 + 64 + 32 = 448 GPUs of quota) holds it next to research's 96 running, and the
    fleet has 512 − 96 = 416 GPUs free, so it starts at once on every seed: "waits 0 s"."""
    sign_in_as(browser, server, server.member)
    browser.get(server.url + "/jobs/product-big")
    browser.find_element(By.ID, "w-nominal").send_keys("256")
    browser.find_element(By.ID, "whatif-run").click()
    answer = wait(browser, 60).until(EC.visibility_of_element_located((By.ID, "whatif-answer")))
    today, changed = answer.find_elements(By.CSS_SELECTOR, "[data-column]")
    assert "waits 0 s (median of 3 of 3 runs" in changed.text
    assert "waits 0 s" not in today.text
    screenshot(browser, artifacts, "whatif")
    assert console_errors(browser) == []


def test_a_study_runs_in_the_background_with_progress_and_shows_today_first(
        browser, server, artifacts) -> None:
    """Other policies on today's queue (the simulator forked from the live state): the card polls
    itself until the table is there, today's policy in its first row."""
    sign_in_as(browser, server, server.viewer)
    browser.get(server.url + "/studies")
    live(browser)
    browser.find_element(By.ID, "run-policies").click()
    card = wait(browser).until(EC.presence_of_element_located(
        (By.CSS_SELECTOR, "#studies-list article.study")))
    assert card.get_attribute("data-state") in ("waiting", "running", "done")
    table = wait(browser, 120).until(EC.visibility_of_element_located(
        (By.CSS_SELECTOR, "#studies-list table")))
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == 2 and "(today)" in rows[0].text
    browser.find_element(By.ID, "run-spares").click()
    wait(browser, 60).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#studies-list table")) == 2)
    screenshot(browser, artifacts, "studies-results")
    assert console_errors(browser) == []
    assert axe_violations(browser) == []


#: The job page's one-line state, '' until the loop has seen the job (the page then refreshes live).
SUMMARY = "const e = document.getElementById('job-summary'); return e ? e.textContent : ''"


def test_a_submitted_job_pends_with_its_reason_and_starts_when_room_frees(browser, server, artifacts) -> None:
    """product may use 64 nominal + 64 borrowed = 128 GPUs (product-big, 256, is never admitted and
    holds nothing). product-a takes all 128 (16 pods × 8; the 64 borrowed come from vision's
    lending limit 48 and interns' 32 unused); product-b (8 GPUs) would make 136 > 128, so admission
    refuses it. Cancelling product-a frees the quota and the next cycle starts product-b; its page
    turns to running without a reload."""
    server.submit("product-a", "product", pods=16)
    with server.api() as c:
        server.wait_for(lambda: c.get("/api/v1/jobs/product-a").json()["state"] == "running",
                        "product-a to run")
    server.submit("product-b", "product", pods=1)
    sign_in_as(browser, server, server.viewer)
    browser.get(server.url + "/jobs/product-b")
    live(browser)
    wait(browser).until(lambda b: "quota" in b.execute_script(
        SUMMARY))
    assert browser.find_element(By.ID, "reason-chain").text
    screenshot(browser, artifacts, "job-pending-quota")
    browser.execute_script("window.__noReload = true")
    with server.api() as c:
        assert c.post("/api/v1/jobs/product-a/cancel").status_code == 200
    wait(browser, 30).until(lambda b: "running" in b.execute_script(
        SUMMARY))
    assert browser.execute_script("return window.__noReload") is True
