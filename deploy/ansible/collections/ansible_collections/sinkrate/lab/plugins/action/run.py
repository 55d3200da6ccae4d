# sinkrate.lab.run: runs one sinkrate command on the board and brings its result back as a
# file per host (results/HOST/COMMAND-TIME.json) and as facts a playbook can test.
#
# An action plugin, run on the controller: the board is reached through the connection's
# shell only, so it needs nothing but the sinkrate binary (no Python).
from __future__ import annotations

import json
import os
import re
import shlex

from ansible.plugins.action import ActionBase

from ansible_collections.sinkrate.lab.plugins.plugin_utils import remote, results

# The commands, and how each starts on sinkrate's command line.
COMMANDS = {
    "check": ["check"],
    "record": ["record"],
    "verify": ["verify"],
    "suite": ["suite"],
    "audit": ["audit"],
    "bench": ["bench"],
    "tune-search": ["tune", "search"],
}
# Exit codes that carry a result: 0 (it holds), 1 (it does not: drops, bad blocks, a
# finding), 3 (not judged: memory, too short). Any other is the run failing.
ANSWERED = (0, 1, 3)
# The collection sets where the result goes.
OWN_FLAGS = ("--output-format", "--output", "--format")


# Keys of Ansible's own in a task's result, never taken from the document.
ANSIBLE_KEYS = ("failed", "changed", "skipped", "msg", "rc", "stderr", "results_file")


def _summary(doc):
    """The result's top-level figures and words (verdict, headroom, exit code...) and its
    error, without its long lists: what a `when:` tests."""
    out = {k: v for k, v in doc.items() if v is None or isinstance(v, (str, int, float, bool))}
    out["error"] = doc.get("error")
    return {k: v for k, v in out.items() if k not in ANSIBLE_KEYS}


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(("command", "args", "binary", "results_dir", "name"))
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        a = self._task.args
        command = a.get("command")
        if command not in COMMANDS:
            return dict(result, failed=True, msg="command: %r is not one of %s" % (command, ", ".join(COMMANDS)))
        extra = a.get("args") or []
        if isinstance(extra, str):
            extra = shlex.split(extra)
        if not isinstance(extra, list) or not all(isinstance(x, (str, int, float)) for x in extra):
            return dict(result, failed=True, msg="args: a list of sinkrate's arguments, or one string")
        extra = [str(x) for x in extra]
        for flag in OWN_FLAGS:
            if any(x == flag or x.startswith(flag + "=") for x in extra):
                return dict(result, failed=True, msg="args: %s is set by sinkrate.lab.run (the result comes back as JSON)" % flag)
        binary = a.get("binary", "/usr/local/bin/sinkrate")
        name = a.get("name") or command
        if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            return dict(result, failed=True, msg="name: %r: letters, digits, '.', '_' and '-' only (it names the result file)" % name)
        results_dir = a.get("results_dir", "results")
        if not os.path.isabs(results_dir):
            results_dir = os.path.join(self._loader.get_basedir(), results_dir)
        host = task_vars.get("inventory_hostname", "host")
        if self._task.check_mode:
            return dict(result, skipped=True, msg="check mode: sinkrate %s was not run" % command)

        def argv_in(work):
            argv = [binary] + COMMANDS[command] + extra + ["--output-format", "json"]
            # check always writes its report: into the run's own directory, removed with it
            # (the same JSON comes back as its output).
            if command == "check":
                argv += ["--output", work + "/check.json"]
            return argv

        rc, out, err = remote.captured(self, argv_in)
        result["rc"] = rc
        result["stderr"] = err
        try:
            doc = json.loads(out) if out.strip() else None
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or rc not in ANSWERED:
            if not isinstance(doc, dict) and rc in ANSWERED:
                msg = "sinkrate %s: exit code %d but its output is not a JSON result (%d bytes: %r)" % (
                    command, rc, len(out), out[:200])
            else:
                # The board's own line ("no space left", "needs root", "not found").
                msg = "sinkrate %s: %s" % (command, remote.error_line(err, "exit code %d" % rc))
            result.update(failed=True, msg=msg)
            if isinstance(doc, dict):
                # The run's own result, with its error.
                result["results_file"] = results.save(results_dir, host, name, out, doc.get("started_at"))
            else:
                # No result: a record of the failure in its place, so that the board is a
                # FAILED row in compare and report, never missing.
                result["results_file"] = results.save_failure(
                    results_dir, host, msg, command=command, task=self._task.get_name(), action="sinkrate.lab.run")
            return result
        result.update(_summary(doc))
        result.update(
            # An answer, whatever it says (exit 1: drops): not a failed task. Said outright:
            # Ansible fails a result that carries a non-zero rc and no `failed` key.
            failed=False,
            # Only a search with --apply changes the board (its winner's settings, kept
            # until restored); the other commands leave nothing behind.
            changed=bool(doc.get("applied")),
            applied=doc.get("applied", []),
            rc=rc,
            results_file=results.save(results_dir, host, name, out, doc.get("started_at")),
        )
        return result
