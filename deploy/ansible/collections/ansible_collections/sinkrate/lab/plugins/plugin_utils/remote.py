# What the collection's actions share: running a command on the board through the
# connection alone (no Python there), and the board's answer as one line.
from __future__ import annotations

import os
import re
import shlex
import tempfile


def quote(argv):
    return " ".join(shlex.quote(str(a)) for a in argv)


def run(action, argv, chdir=None):
    """Runs argv on the board with the task's environment (and become, when set): the
    connection's shell only, so a board with no Python works. Returns (rc, stdout, stderr)."""
    return shell(action, quote(argv), chdir)


def shell(action, cmd, chdir=None):
    """As run, for a command line already quoted (redirections, several commands)."""
    env = action._compute_environment_string()
    if env:
        cmd = env.strip() + " " + cmd
    res = action._low_level_execute_command(cmd, sudoable=True, chdir=chdir)
    return res.get("rc", 1), res.get("stdout", ""), res.get("stderr", "")


def last_line(out, pattern):
    """The last line of out that is wholly `pattern`: a board's login shell may print its own
    words (a profile's messages) before a command's, and through a terminal stdout and stderr
    come mixed. None when no line is."""
    for line in reversed(out.splitlines()):
        line = line.strip()
        if re.fullmatch(pattern, line):
            return line
    return None


def error_line(stderr, fallback):
    """sinkrate's one error line ("sinkrate: error: ..."), else the last line said."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for line in lines:
        if line.startswith("sinkrate: error:"):
            return line[len("sinkrate: "):]
    return lines[-1] if lines else fallback


def captured(action, argv_in):
    """Runs the command argv_in(work) returns in a directory of its own on the board (work,
    removed afterwards), its output and its messages into files there, and brings them back:
    an SSH session with a terminal would mix the two (and a progress bar drawn for that
    terminal) into one stream. Returns (rc, stdout, stderr); rc 255 with the shell's words
    when the command could not be started at all."""
    # A play killed on the controller leaves its directory on the board (the board's
    # sinkrate itself cleans up on the hang-up): the next play removes those of this user
    # older than two days (no run lasts that long), never following a link.
    shell(
        action,
        "find /tmp -maxdepth 1 -type d -name 'sinkrate-lab.*' -user \"$(id -u)\" -mmin +2880 "
        "-exec rm -rf -- {} + 2>/dev/null; true",
    )
    rc, out, err = run(action, ["mktemp", "-d", "/tmp/sinkrate-lab.XXXXXX"])
    work = last_line(out, r"/tmp/sinkrate-lab\.[A-Za-z0-9]+") or ""
    if rc != 0 or not work.startswith("/tmp/sinkrate-lab."):
        return 255, "", "cannot make a temporary directory on the board: %s" % error_line(err or out, "exit %d" % rc)
    try:
        argv = argv_in(work)
        out_path, err_path = work + "/stdout.json", work + "/stderr.txt"
        script = "%s > %s 2> %s; echo sinkrate-rc=$?; chmod 755 %s; chmod 644 %s %s" % (
            quote(argv), quote([out_path]), quote([err_path]), quote([work]), quote([out_path]), quote([err_path]),
        )
        _, said, shell_err = shell(action, script, chdir=work)
        found = re.findall(r"sinkrate-rc=(\d+)", said)
        if not found:
            return 255, "", shell_err or said
        texts = []
        for path in (out_path, err_path):
            fd, local = tempfile.mkstemp(prefix="sinkrate-lab-")
            os.close(fd)
            try:
                action._connection.fetch_file(path, local)
                with open(local, encoding="utf-8", errors="replace") as f:
                    texts.append(f.read())
            finally:
                os.unlink(local)
        return int(found[-1]), texts[0], texts[1]
    finally:
        run(action, ["rm", "-rf", "--", work])
