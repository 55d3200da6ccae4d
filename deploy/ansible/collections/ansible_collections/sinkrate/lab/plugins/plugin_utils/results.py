# Where the lab's results go on the controller: results/HOST/NAME-TIME.json, each created
# exclusively (no result replaces another, nothing someone else put there is written through),
# and the record a board that failed leaves in place of its result.
from __future__ import annotations

import json
import os
import re
import tempfile
import time

# The envelope schema sinkrate's results carry; a failure record is read by `sinkrate
# compare` and `report` as a run that failed (the lab tests read one back through them).
SCHEMA = "sinkrate.run/1"
# The lab's commands as sinkrate names the kind of their result.
KINDS = {
    "check": "check",
    "record": "record",
    "verify": "verify",
    "suite": "suite",
    "audit": "audit",
    "bench": "bench",
    "tune-search": "tune_search",
}


def host_folder(results_dir, host):
    """results_dir/HOST, made if missing: an inventory name is a folder name here, never a
    path ("../x" stays inside)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", host)
    if name in (".", ".."):
        name = "_" + name
    folder = os.path.join(results_dir, name)
    os.makedirs(folder, exist_ok=True)
    return folder


def save(results_dir, host, name, text, stamp):
    """Writes text as results_dir/HOST/NAME-STAMP.json, never over another result (a second
    one with the same name gets -2, -3...). Returns its path."""
    folder = host_folder(results_dir, host)
    stamp = re.sub(r"[^0-9T]", "", str(stamp or ""))[:15] or "run"
    fd, tmp = tempfile.mkstemp(prefix=".sinkrate-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        n = 1
        while True:
            path = os.path.join(folder, "%s-%s%s.json" % (name, stamp, "" if n == 1 else "-%d" % n))
            try:
                # A hard link fails if the name is taken: no result replaces another.
                os.link(tmp, path)
                return path
            except FileExistsError:
                n += 1
    finally:
        os.unlink(tmp)


def one_line(text, limit=500):
    """A message as one line: a board's answer may run over several, and the table has one."""
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def save_failure(results_dir, host, what, command=None, task=None, action=None, unreachable=False, version="0"):
    """The record of a board that failed, in place of its result: a sinkrate envelope with
    its error and no result, which compare and report show as FAILED with `what`."""
    now = time.time()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    doc = {
        "schema": SCHEMA,
        "tool": {"name": "sinkrate.lab", "version": version},
        "started_at": started,
        "timestamp_ms": int(now * 1000),
        "host": None,
        "interrupted": False,
        "error": {"what": one_line(what), "at_s": None},
        "warnings": [],
        "notices": [],
        "lab": {"host": host, "task": task, "action": action, "command": command, "unreachable": unreachable},
    }
    if command in KINDS:
        doc["kind"] = KINDS[command]
    return save(results_dir, host, "failed", json.dumps(doc, indent=2) + "\n", started)
