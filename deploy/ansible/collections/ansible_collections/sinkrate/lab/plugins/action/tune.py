# sinkrate.lab.tune: applies settings through `sinkrate tune apply` (journaled on the board,
# so `state: restored` or the next sinkrate run puts them back), or restores them.
#
# changed only when a value changes; check mode runs `tune apply --dry-run`; --diff shows
# each setting's old and new value. Run on the controller, through the board's shell.
from __future__ import annotations

import json

from ansible.plugins.action import ActionBase

from ansible_collections.sinkrate.lab.plugins.plugin_utils import remote


def _name(setting):
    kind = setting.get("kind")
    if kind == "sysctl":
        return setting.get("name", "?").replace("/", ".")
    return "%s:%s" % (kind, setting.get("name") or setting.get("attr") or setting.get("option") or "?")


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(("settings", "state", "path", "persist", "binary"))
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        a = self._task.args
        binary = a.get("binary", "/usr/local/bin/sinkrate")
        state = a.get("state", "applied")
        if state not in ("applied", "restored"):
            return dict(result, failed=True, msg="state: applied or restored, not %r" % state)
        if state == "restored":
            return self._restore(result, binary)
        settings = a.get("settings") or []
        if isinstance(settings, str):
            settings = settings.split()
        if not settings or not all(isinstance(s, str) for s in settings):
            return dict(result, failed=True, msg="settings: a list such as [vm.dirty_bytes=60000000, queue:scheduler=none]")
        argv = [binary, "tune", "apply", "--output-format", "json"]
        if a.get("path"):
            argv += ["--path", str(a["path"])]
        if a.get("persist"):
            argv.append("--persist")
        if self._task.check_mode:
            argv.append("--dry-run")
        rc, out, err = remote.captured(self, lambda work: argv + settings)
        try:
            doc = json.loads(out)
        except ValueError:
            doc = None
        if rc != 0 or not isinstance(doc, dict):
            return dict(result, failed=True, rc=rc, msg="sinkrate tune apply: %s" % remote.error_line(err, "exit code %d" % rc))
        changes = [c for c in doc.get("changes", []) if c.get("from") != c.get("to")]
        result.update(
            changed=bool(changes),
            changes=[{"setting": _name(c.get("setting", {})), "from": c.get("from"), "to": c.get("to")} for c in changes],
            dry_run=bool(doc.get("dry_run")),
        )
        if self._task.diff:
            result["diff"] = {
                "before_header": "settings before",
                "after_header": "settings after",
                "before": "".join("%s = %s\n" % (_name(c["setting"]), c.get("from")) for c in changes),
                "after": "".join("%s = %s\n" % (_name(c["setting"]), c.get("to")) for c in changes),
            }
        return result

    def _restore(self, result, binary):
        argv = [binary, "tune", "restore", "--output-format", "json"]
        if self._task.check_mode:
            argv.append("--dry-run")
        rc, out, err = remote.captured(self, lambda work: argv)
        try:
            doc = json.loads(out)
        except ValueError:
            doc = None
        if rc != 0 or not isinstance(doc, dict):
            return dict(result, failed=True, rc=rc, msg="sinkrate tune restore: %s" % remote.error_line(err, "exit code %d" % rc))
        # What this restore put back, and what an earlier killed run's journal did.
        restored = []
        for part in ("recovered", "restored"):
            section = doc.get(part)
            if isinstance(section, dict):
                restored += section.get("restored", [])
        result.update(changed=bool(restored), restored=restored, dry_run=bool(doc.get("dry_run")))
        return result
