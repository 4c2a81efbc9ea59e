"""Real headless Chromium (the system's, driven by Playwright) against the live stack."""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from playwright.sync_api import expect, sync_playwright

from tests.conftest import ARTIFACTS
from tests.livestack import ROOT
from tests.stack.conftest import clean_engine  # noqa: F401 - the committed tests' fixture

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = ARTIFACTS / "screenshots"
DOCS_IMG = ROOT / "docs" / "img"
PASSWORD = "pw-for-tests-1"  # tests.factories.UserFactory's
WAIT_MS = 45_000  # generous: two cores, a worker and other suites share the machine


HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    """In this directory, the modules that drive no browser (Django's test client) run
    first, then the ones that do, each group in its usual order: the browser lives from
    the first test that uses it to the end of the directory (``browser``), and the tests
    before it keep Django's async-safety check."""
    mine = [i for i, item in enumerate(items) if item.path.parent == HERE]
    if not mine:
        return
    ours = [items[i] for i in mine]
    ordered = [t for t in ours if "browser" not in t.fixturenames]
    ordered += [t for t in ours if "browser" in t.fixturenames]
    for i, item in zip(mine, ordered, strict=True):
        items[i] = item


@pytest.fixture(scope="package")
def browser():
    """Chromium for the browser tests, started once for the directory (a start and stop
    took 3 to 4 s on the shared machine, once for each of 17 modules); each test has
    contexts of its own (``new_page``). Playwright's sync API keeps an event loop running
    in this thread, which Django's async-safety check takes for async code; the test's own
    ORM calls between browser steps are plain synchronous code, so the check is lifted
    while the browser runs, and the loop ends with it (the directory's tests without a
    browser run before it, ``pytest_collection_modifyitems``; other suites keep the
    check)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (ops/test installs it)")
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                yield chromium
            finally:
                chromium.close()
    finally:
        if before is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture
def new_page(browser, live_stack):
    """Pages in contexts of their own (separate cookies: one per user), closed afterwards.
    Uncaught page errors and Content-Security-Policy violations (Chromium reports them on
    the console), htmx's refusals to evaluate an expression under the CSP among them, are
    collected in ``new_page.errors``."""
    expect.set_options(timeout=WAIT_MS)
    contexts = []
    errors: list[str] = []

    def watch(page):
        page.on("pageerror", lambda exc: errors.append(f"{page.url}: {exc}"))
        page.on(
            "console",
            lambda m: (
                errors.append(f"{page.url}: {m.text}")
                if "Content Security Policy" in m.text or "evalDisallowed" in m.text
                else None
            ),
        )
        if os.environ.get("DEBUG_BROWSER"):  # print every frame and console line
            page.on("console", lambda m: print("console", page.url, m.type, m.text))
            page.on(
                "websocket",
                lambda ws: ws.on("framereceived", lambda f: print("ws <", page.url, f)),
            )
        return page

    def make(*, width: int = 1280, height: int = 900):
        context = browser.new_context(
            base_url=live_stack.url, viewport={"width": width, "height": height}
        )
        context.set_default_timeout(WAIT_MS)
        contexts.append(context)
        return watch(context.new_page())

    def tab(page):
        """Another page (a tab) in ``page``'s context: the same user, cookies and window
        size, and its errors collected alike."""
        return watch(page.context.new_page())

    make.tab = tab
    make.errors = errors
    yield make
    for context in contexts:
        context.close()


def off_loop(fn, /, *args, **kwargs):
    """Run ``fn`` in a thread of its own and return its result: services push to Channels
    with async_to_sync after commit, which refuses a thread with a running event loop (and
    Playwright's sync API runs one in the test's thread)."""

    def call():
        try:
            return fn(*args, **kwargs)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result()


def login(page, username: str, password: str = PASSWORD, *, form: bool = False) -> None:
    """Log ``page``'s context in as ``username``; the page ends on the home page, where the
    login form leads. With ``form``, through the login form, as a person does (the tests
    that pass it drive the form; test_layout checks the page); otherwise with a session
    made on the server, as the test client's ``force_login`` makes it, given to the
    browser as its cookie: the form took a page load, two inputs and a redirect each time,
    about a second on the shared machine, for each of some 50 logins in this directory."""
    if form:
        page.goto("/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(re.compile(r"^(?!.*/login/)"))
        return

    def session_key() -> str:
        client = Client()
        client.force_login(get_user_model().objects.get(username=username))
        return client.cookies[settings.SESSION_COOKIE_NAME].value

    cookie = {"name": settings.SESSION_COOKIE_NAME, "value": off_loop(session_key)}
    page.context.add_cookies([{**cookie, "domain": "127.0.0.1", "path": "/"}])
    page.goto("/")


def screenshot(page, name: str, *, docs: str | None = None, full_page: bool = True) -> Path:
    """Save a screenshot in test-artifacts/screenshots/. With ``docs``, also as
    docs/img/<docs>.png for the README, when that file is missing or UPDATE_DOCS_IMG=1 (so a
    test run does not rewrite committed pictures)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page, animations="disabled")
    if docs:
        target = DOCS_IMG / f"{docs}.png"
        if not target.exists() or os.environ.get("UPDATE_DOCS_IMG") == "1":
            DOCS_IMG.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    return path
