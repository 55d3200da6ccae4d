# The documentation of sinkrate.lab.install; the work is done by its action plugin.
DOCUMENTATION = r"""
module: install
short_description: Put the sinkrate built for the board's architecture on the board
description:
  - Reads the board's architecture (C(uname -m)), takes the matching static binary from a
    folder of scripts/cross.sh's builds (C(TRIPLE/sinkrate), C(TRIPLE/release/sinkrate) or a
    release tarball), sends it over the connection and renames it into place, and checks that
    C(sinkrate --version) runs there. Unchanged when the board has the same bytes.
  - A board whose architecture has no build fails with the architecture and the build to make.
options:
  binaries:
    description: The controller's folder of builds, relative to the playbook.
    type: path
    required: true
  dest:
    description: Where the binary goes on the board.
    type: str
    default: /usr/local/bin/sinkrate
author: sinkrate
"""

RETURN = r"""
arch:
  description: The board's architecture.
  type: str
version:
  description: What C(sinkrate --version) said on the board.
  type: str
"""
