"""gcspy's pytest plugin: a leak verdict per test, under ``gcspy run``.

Registered through the ``pytest11`` entry point when the package is installed,
or loaded with ``-p gcspy.pytest_plugin`` from a source tree. It does nothing
but register its marker and options unless gcspy's shim is loaded
(``gcspy run -- python -m pytest``).

Per test: before its setup, a marker ("pytest <nodeid>") and a scan that
takes in everything already lost (earlier tests' leaks, imports); after its
call, a scan whose new lost blocks are the test's own. Their bytes, in the
classes counted (``--gcspy-leak-classes``, ini ``gcspy_leak_classes``;
all three by default, as memcheck's default gate counts definite and
possible: a block the test dropped is possible when a stale interior
pointer in the interpreter's memory still points into it, and the
interpreter's own possible blocks were taken in by the scan before the
test), count against the limit. A test over its limit, ``@pytest.mark.gcspy_limit_leaks("1 MB")`` or
the default (``--gcspy-limit-leaks``, ini ``gcspy_limit_leaks``), fails
itself, as pytest-memray's ``limit_leaks`` does; every test carries its
numbers as JUnit properties (``--junitxml``). Leaks made in a teardown are
taken in by the next test's first scan, not charged to it.
"""

import pytest

import gcspy

DEFAULT_LIMIT = "0"
DEFAULT_CLASSES = "definite,indirect,possible"
_MARKER = "gcspy_limit_leaks"


def pytest_addoption(parser):
    group = parser.getgroup("gcspy", "gcspy leak checks (active under `gcspy run`)")
    group.addoption("--gcspy-limit-leaks", default=None, metavar="SIZE",
                    help="leak limit of a test without a %s marker: bytes lost during "
                         "the test (default %s; 'none' for no limit)" % (_MARKER, DEFAULT_LIMIT))
    group.addoption("--gcspy-leak-classes", default=None, metavar="LIST",
                    help="the classes whose bytes count against a test's limit, from "
                         "definite,indirect,possible (default: %s)" % DEFAULT_CLASSES)
    parser.addini("gcspy_limit_leaks", "default leak limit of a test (as --gcspy-limit-leaks)",
                  default=None)
    parser.addini("gcspy_leak_classes", "classes counted (as --gcspy-leak-classes)",
                  default=None)


def _limit(text, where):
    if str(text).strip().lower() == "none":
        return None
    try:
        return gcspy.parse_size(text)
    except ValueError as e:
        raise pytest.UsageError("gcspy: %s: %s" % (where, e)) from None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "%s(size): fail the test when it leaks more than size (the bytes of "
                   "the classes counted, e.g. \"1 MB\"), when run under gcspy" % _MARKER)
    where, text = _setting(config, "gcspy_limit_leaks", DEFAULT_LIMIT)
    default = _limit(text, where)
    where, text = _setting(config, "gcspy_leak_classes", DEFAULT_CLASSES)
    classes = tuple(c.strip() for c in text.split(",") if c.strip())
    bad = [c for c in classes if c not in gcspy.CLASSES] or ([] if classes else [text])
    if bad:
        raise pytest.UsageError("gcspy: %s: %r is not a leak class (definite, indirect, possible)"
                                % (where, bad[0]))
    if gcspy.active():
        config.pluginmanager.register(_PerTest(default, classes), "gcspy-per-test")


def _setting(config, name, default):
    """(where it came from, its text): the command line, the ini file, or
    the default."""
    opt = config.getoption(name)
    if opt is not None:
        return "--" + name.replace("_", "-"), opt
    ini = config.getini(name)
    if ini:
        return "ini " + name, ini
    return "default", default


def pytest_report_header(config):
    if gcspy.active():
        return "gcspy: a leak scan per test"
    return "gcspy: not loaded (run under `gcspy run` to check tests for leaks)"


class _PerTest:
    def __init__(self, default_limit, classes):
        self.default_limit = default_limit
        self.classes = classes
        self.verdicts = {}  # nodeid -> (leaks, limit) of tests that leaked

    def _limit_of(self, item):
        m = item.get_closest_marker(_MARKER)
        if m is None:
            return self.default_limit
        if len(m.args) != 1 or m.kwargs:
            raise pytest.UsageError("gcspy: %s: %s takes one size, e.g. %s(\"1 MB\")"
                                    % (item.nodeid, _MARKER, _MARKER))
        return _limit(m.args[0], "%s: %s" % (item.nodeid, _MARKER))

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item):
        gcspy.scan()  # takes in what is lost already: not this test's
        gcspy.mark("pytest " + item.nodeid)
        yield

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item):
        yield
        leaks = gcspy.scan()
        if leaks is None:
            item.user_properties.append(("gcspy", "no scan"))
            return
        limit = self._limit_of(item)
        leaked = leaks.new_bytes(self.classes)
        item.user_properties.append(("gcspy_leaked_bytes", leaked))
        item.user_properties.append(("gcspy_leaked_blocks", leaks.new_blocks(self.classes)))
        for c in gcspy.CLASSES:
            item.user_properties.append(("gcspy_%s_bytes" % c, leaks.new[c].bytes))
        item.user_properties.append(("gcspy_limit_bytes", "none" if limit is None else limit))
        if any(leaks.new[c].blocks for c in gcspy.CLASSES):
            self.verdicts[item.nodeid] = (leaks, leaked, limit)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when != "call" or item.nodeid not in self.verdicts:
            return
        leaks, leaked, limit = self.verdicts[item.nodeid]
        if limit is None or leaked <= limit:
            return
        msg = ("gcspy: the test leaked %s, over its limit of %s: %s. The blocks' stacks: "
               "gcspy report on the trace (the scan after the marker \"pytest %s\")"
               % (gcspy.format_size(leaked), gcspy.format_size(limit), _amounts(leaks),
                  item.nodeid))
        if report.passed:
            report.outcome = "failed"
            report.longrepr = msg
        else:  # failed already: the leak is said beside the test's own failure
            report.sections.append(("gcspy", msg))

    def pytest_terminal_summary(self, terminalreporter):
        if not self.verdicts:
            return
        terminalreporter.write_sep("=", "gcspy leaks")
        for nodeid, (leaks, leaked, limit) in self.verdicts.items():
            over = limit is not None and leaked > limit
            terminalreporter.write_line("%s %s: %s" % ("FAIL" if over else "    ", nodeid,
                                                       _amounts(leaks)))


def _amounts(leaks):
    parts = ["%s in %d block%s, %s" % (gcspy.format_size(leaks.new[c].bytes), leaks.new[c].blocks,
                                      "" if leaks.new[c].blocks == 1 else "s", c)
             for c in gcspy.CLASSES if leaks.new[c].blocks]
    return "; ".join(parts) or "nothing"
