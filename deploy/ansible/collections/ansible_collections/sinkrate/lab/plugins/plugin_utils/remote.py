# What the collection's actions share: running a command on the board through the
# connection alone (no Python there), and the board's answer as one line.
from __future__ import annotations

import shlex


def quote(argv):
    return " ".join(shlex.quote(str(a)) for a in argv)


def run(action, argv, chdir=None):
    """Runs argv on the board with the task's environment (and become, when set): the
    connection's shell only, so a board with no Python works. Returns (rc, stdout, stderr)."""
    cmd = quote(argv)
    env = action._compute_environment_string()
    if env:
        cmd = env.strip() + " " + cmd
    res = action._low_level_execute_command(cmd, sudoable=True, chdir=chdir)
    return res.get("rc", 1), res.get("stdout", ""), res.get("stderr", "")


def error_line(stderr, fallback):
    """sinkrate's one error line ("sinkrate: error: ..."), else the last line said."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for line in lines:
        if line.startswith("sinkrate: error:"):
            return line[len("sinkrate: "):]
    return lines[-1] if lines else fallback
