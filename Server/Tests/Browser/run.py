#!/usr/bin/env python3
"""End-to-end tests of the browser client in real headless Chromium, and of the Swift SDK's
GStreamer engine (`switchboard call`) against it.

Starts coturn and the Switchboard server (the debug binary, built with the GStreamer trait) on
127.0.0.1, opens Chromium sessions with fake media devices through chromedriver, and drives the
page like a user: log in, call, answer, talk, mute, share a screen, switch to video, hang up, look
at the records. Other members are `switchboard call` processes driven through stdin, read through
their JSON lines. Each side proves it decoded the other's media: Chromium's framesDecoded,
totalSamplesReceived and audio energy from getStats, the Swift engine's frames and levels.
Everything stays on 127.0.0.0/8: Chromium resolves no host names, gathers only loopback host
candidates (the page's ?loopback=1), the Swift engine gathers on 127.0.0.1 only (--loopback), and
the relay-only runs use the local coturn. The network tests (NetworkTests) run the server and each
Chromium in network namespaces of their own instead (netns.py), where links are cut and addresses
moved; their traffic stays inside the namespaces the test made.

This file is the entry point: it starts the servers and runs the test classes, in the order of
their names. The harness is in the modules beside it: harness.py (the run's arguments and server,
the waits), servers.py (coturn, Switchboard, Janus), pages.py (Chromium and `Page`), swiftcall.py
(`switchboard call`), wsclient.py (the signaling protocol spoken by the test itself), sites.py
(small servers of the tests' own) and testcase.py (`Harness`, the base class); the tests, by topic, in browser_tests.py, product_tests.py, swift_engine_tests.py,
page_policy_tests.py, web_push_tests.py, sfu_tests.py and network_tests.py.

Usage: run.py --binary Server/.build/debug/switchboard --web Server/Sources/SwitchboardWebClient/Web
              --golden Server/Tests/SwitchboardProtocolTests/Golden --artifacts Server/.build/browser-artifacts
"""

import argparse
import sys
import time
import unittest

import harness
from servers import Servers

# The test classes: unittest.main runs those it finds in this module, in the order of their names.
from browser_tests import BrowserTests
from network_tests import NetworkTests
from move_tests import MoveTests
from page_policy_tests import PagePolicyTests
from product_tests import ProductTests
from sfu_tests import SFUTests
from swift_engine_tests import SwiftEngineTests
from web_push_tests import WebPushTests


class TimedResult(unittest.TextTestResult):
    """Notes how long each test took and how it ended (scripts/test prints the slowest)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.times = []
        self._started = {}

    def startTest(self, test):
        self._started[test.id()] = time.monotonic()
        super().startTest(test)

    def _note(self, test, outcome):
        started = self._started.pop(test.id(), None)
        if started is not None:
            # The class and the method: the module the class is in is left out.
            self.times.append((test.id().removeprefix(f"{type(test).__module__}."), time.monotonic() - started,
                               outcome))

    def addSuccess(self, test):
        self._note(test, "ok")
        super().addSuccess(test)

    def addFailure(self, test, err):
        self._note(test, "failed")
        super().addFailure(test, err)

    def addError(self, test, err):
        self._note(test, "error")
        super().addError(test, err)

    def addSkip(self, test, reason):
        self._note(test, "skipped")
        super().addSkip(test, reason)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--web", required=True)
    parser.add_argument("--golden", required=True)
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--times", help="a file to write each test's name, seconds and outcome to (TSV)")
    harness.ARGS, rest = parser.parse_known_args()
    harness.SERVER = Servers()
    harness.SERVER.start()
    try:
        runner = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult)
        program = unittest.main(argv=[sys.argv[0], "-v", *rest], exit=False, testRunner=runner)
        ok = program.result.wasSuccessful()
        if harness.ARGS.times:
            with open(harness.ARGS.times, "w") as out:
                for name, seconds, outcome in program.result.times:
                    out.write(f"{name}\t{seconds:.1f}\t{outcome}\n")
    finally:
        harness.SERVER.stop()
    print(f"screenshots in {harness.ARGS.artifacts}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
