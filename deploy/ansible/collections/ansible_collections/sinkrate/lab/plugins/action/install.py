# sinkrate.lab.install: puts the sinkrate built for the board's architecture on the board,
# from a folder of the static binaries scripts/cross.sh builds, and checks it runs.
#
# Run on the controller: the binary is sent through the connection (scp/sftp) and the
# board needs no Python. Unchanged when the board already has the same bytes.
from __future__ import annotations

import glob
import hashlib
import os
import re
import tarfile
import tempfile

from ansible.plugins.action import ActionBase

from ansible_collections.sinkrate.lab.plugins.plugin_utils import remote

# `uname -m` to the Rust target scripts/cross.sh builds for it.
TRIPLES = {
    "aarch64": ["aarch64-unknown-linux-musl"],
    "arm64": ["aarch64-unknown-linux-musl"],
    "armv7l": ["armv7-unknown-linux-musleabihf", "armv7-unknown-linux-gnueabihf"],
    "armv8l": ["armv7-unknown-linux-musleabihf", "armv7-unknown-linux-gnueabihf"],
    "x86_64": ["x86_64-unknown-linux-musl"],
}


def _find(binaries, triple):
    """The binary for a target in `binaries`, and whether it is a temporary copy: TRIPLE/sinkrate,
    TRIPLE/release/sinkrate (a cargo target directory), or sinkrate from a release tarball
    sinkrate-*-TRIPLE.tar.gz (extracted to a temporary file)."""
    for rel in ("%s/sinkrate" % triple, "%s/release/sinkrate" % triple):
        path = os.path.join(binaries, rel)
        if os.path.isfile(path):
            return path, False
    for tarball in sorted(glob.glob(os.path.join(binaries, "**", "sinkrate-*%s*.tar.gz" % triple), recursive=True)):
        with tarfile.open(tarball) as t:
            member = next((m for m in t.getmembers() if m.isfile() and os.path.basename(m.name) == "sinkrate"), None)
            if member is None:
                continue
            fd, out = tempfile.mkstemp(prefix="sinkrate-")
            with os.fdopen(fd, "wb") as f, t.extractfile(member) as src:
                f.write(src.read())
            return out, True
    return None, False


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class ActionModule(ActionBase):
    # The binary goes straight to its place (a name of its own beside it, made by mktemp
    # there): no remote temporary directory in the user's home, which a board's user may
    # not have.
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("binaries", "dest"))
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        a = self._task.args
        binaries = a.get("binaries")
        dest = a.get("dest", "/usr/local/bin/sinkrate")
        if not binaries:
            return dict(result, failed=True, msg="binaries: the folder of sinkrate's builds (scripts/cross.sh's target/ or tarballs)")
        binaries = os.path.join(self._loader.get_basedir(), binaries)
        if not os.path.isdir(binaries):
            return dict(result, failed=True, msg="binaries: %s is not a folder" % binaries)
        rc, out, err = remote.run(self, ["uname", "-m"])
        machine = remote.last_line(out, r"[A-Za-z0-9_]+")
        if rc != 0 or not machine:
            return dict(result, failed=True, msg="cannot tell the board's architecture: %s" % remote.error_line(err, "exit %d" % rc))
        local, extracted = None, False
        for triple in TRIPLES.get(machine, []):
            local, extracted = _find(binaries, triple)
            if local:
                break
        if not local:
            return dict(
                result,
                failed=True,
                msg="no sinkrate built for this board's architecture (%s) in %s: build it with scripts/cross.sh %s"
                % (machine, binaries, " ".join(TRIPLES.get(machine, ["(no target for %s)" % machine]))),
            )
        try:
            return self._install(result, machine, local, dest)
        finally:
            if extracted:
                os.unlink(local)

    def _install(self, result, machine, local, dest):
        result.update(arch=machine, source=local, dest=dest)
        want = _sha256(local)
        rc, out, _ = remote.run(self, ["sha256sum", dest])
        line = remote.last_line(out, r"[0-9a-f]{64}\s.*") if rc == 0 else None
        have = line.split()[0] if line else None
        changed = have != want
        if changed and not self._task.check_mode:
            # Next to its place, then renamed over it: a binary in use is never half written.
            # A name of its own beside the destination, made by mktemp on the board (created
            # exclusively, so nothing someone else put there is written through).
            rc, out, err = remote.run(self, ["mktemp", dest + ".sinkrate-part.XXXXXX"])
            part = remote.last_line(out, re.escape(dest) + r"\.sinkrate-part\.[A-Za-z0-9]+")
            if rc != 0 or not part:
                return dict(result, failed=True, msg="cannot install %s: %s%s" % (
                    dest, remote.error_line(err or out, "exit %d" % rc), self._not_root()))
            try:
                self._transfer_file(local, part)
            except Exception:
                remote.run(self, ["rm", "-f", part])
                raise
            for argv in (["chmod", "755", part], ["mv", "-f", part, dest]):
                rc, _, err = remote.run(self, argv)
                if rc != 0:
                    remote.run(self, ["rm", "-f", part])
                    return dict(result, failed=True, msg="cannot install %s: %s%s" % (
                        dest, remote.error_line(err, "exit %d" % rc), self._not_root()))
        result["changed"] = changed
        if self._task.check_mode:
            return result
        rc, out, err = remote.run(self, [dest, "--version"])
        version = remote.last_line(out, r"sinkrate \S+.*")
        if rc != 0 or not version:
            return dict(result, failed=True, msg="%s does not run on this board: %s" % (dest, remote.error_line(err or out, "exit %d" % rc)))
        result["version"] = version
        return result

    def _not_root(self):
        """Why the install likely failed when the board's user is not root, and what to do."""
        rc, out, _ = remote.run(self, ["id", "-u"])
        uid = remote.last_line(out, r"[0-9]+") if rc == 0 else None
        if uid is None or uid == "0":
            return ""
        return (
            ": the board's user is not root (uid %s): connect as root (ansible_user: root) or give"
            " the play become: true (tune and some of check's readings need root too), or install"
            " where this user can write (sinkrate_binary: PATH)" % uid
        )
