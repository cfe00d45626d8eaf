"""The base class of every test class: the pages and `switchboard call` processes a test opens,
closed after it (with their screenshots, consoles and logs when it failed), and the check that no
page broke its Content-Security-Policy."""

import sys
import unittest

import harness
from pages import Page
from swiftcall import SwiftCall


class Harness(unittest.TestCase):
    """Pages and `switchboard call` processes, closed after each test (with their logs when it failed)."""

    def setUp(self):
        self.pages = []
        self.calls = []

    def tearDown(self):
        failed = any(error for _, error in (self._outcome.result.errors + self._outcome.result.failures)
                     if _ is self) if hasattr(self._outcome, "result") else False
        # Every page ran under its Content-Security-Policy without breaking it (a test that
        # provokes a violation on purpose says so).
        violations = {}
        for page in self.pages:
            if not failed and not page.violations_expected:
                found = page.csp_violations()
                if found:
                    violations[page.user] = found
            if failed:
                page.screenshot(f"failed-{self._testMethodName}-{page.user}")
                print(f"--- console of {page.user}", *page.console()[-20:], sep="\n", file=sys.stderr)
            page.close()
        for call in self.calls:
            call.stop()
            if failed:
                print(call.output(), file=sys.stderr)
        if failed:
            print(harness.SERVER.logs(), file=sys.stderr)
        if violations:
            self.fail(f"Content-Security-Policy violations: {violations}")

    def page(self, user, query="", url=None, autoplay=True, place=None, shared=None):
        page = Page(user, query, url, autoplay, place, shared)
        self.pages.append(page)
        return page

    def logged_in(self, *users, query=""):
        pages = [self.page(user, query) for user in users]
        for page in pages:
            page.log_in()
        return pages

    def swift(self, user, *arguments, relay=False, port=None):
        call = SwiftCall(user, *arguments, relay=relay, port=port)
        self.calls.append(call)
        return call
