# sinkrate.lab.results: a board that failed leaves a record in results/HOST/ in place of its
# result, so that `sinkrate compare results/` and `sinkrate report results/` show it as a
# FAILED row with its reason, never missing in silence.
from __future__ import annotations

DOCUMENTATION = """
name: results
type: aggregate
short_description: records each board that failed in results/HOST/ for sinkrate compare and report
description:
  - When a board is unreachable, or a task on it fails (the install, a run, a tune, or any
    other task of the play), writes results/HOST/failed-TIME.json beside the board's results.
    sinkrate compare and report read it as a run that failed, and show the board as FAILED
    with the reason.
  - A sinkrate.lab.run that fails writes its own record (or the run's result with its error);
    this callback writes none for it. The controller's own tasks (localhost) are not boards.
  - The folder is the task's results_dir when a sinkrate.lab.run names one, else
    results/ beside the playbook.
requirements:
  - enabled in ansible.cfg (callbacks_enabled = sinkrate.lab.results), as deploy/ansible does
"""

import os

from ansible import context
from ansible.plugins.callback import CallbackBase

from ansible_collections.sinkrate.lab.plugins.plugin_utils import results

# The controller's own names: its tasks (compare, report) are not a board's.
CONTROLLER = ("localhost", "127.0.0.1", "::1")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sinkrate.lab.results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._basedir = os.getcwd()

    def v2_playbook_on_start(self, playbook):
        self._basedir = getattr(playbook, "_basedir", None) or os.getcwd()

    def _record(self, result, what, unreachable):
        host = result._host.get_name()
        if host in CONTROLLER:
            return
        # Check mode changes nothing, on the boards or here: no record is written.
        if getattr(result._task, "check_mode", False) or context.CLIARGS.get("check"):
            return
        task = result._task
        res = result._result or {}
        if res.get("results_file"):
            # A run that recorded its own failure (or its result with its error).
            return
        args = task.args or {}
        action = getattr(task, "resolved_action", None) or task.action
        command = args.get("command") if action == "sinkrate.lab.run" else None
        results_dir = args.get("results_dir") if action == "sinkrate.lab.run" else None
        # A folder still holding a template is not a folder: the default one then.
        if not isinstance(results_dir, str) or "{{" in results_dir:
            results_dir = "results"
        if not os.path.isabs(results_dir):
            results_dir = os.path.join(self._basedir, results_dir)
        try:
            path = results.save_failure(
                results_dir,
                host,
                "%s: %s" % (task.get_name(), what),
                command=command if isinstance(command, str) else None,
                task=task.get_name(),
                action=action,
                unreachable=unreachable,
            )
        except OSError as e:
            self._display.warning("sinkrate.lab.results: cannot record that %s failed: %s" % (host, e))
            return
        self._display.vvv("sinkrate.lab.results: %s failed: recorded in %s" % (host, path))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors:
            return
        res = result._result or {}
        what = res.get("msg") or res.get("stderr") or "failed (exit code %s)" % res.get("rc", "?")
        self._record(result, what, unreachable=False)

    def v2_runner_on_unreachable(self, result):
        res = result._result or {}
        self._record(result, "unreachable: %s" % (res.get("msg") or "no answer"), unreachable=True)
