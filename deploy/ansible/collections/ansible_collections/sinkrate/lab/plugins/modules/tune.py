# The documentation of sinkrate.lab.tune; the work is done by its action plugin.
DOCUMENTATION = r"""
module: tune
short_description: Apply settings through sinkrate tune apply, or restore them
description:
  - C(state=applied) runs C(sinkrate tune apply SETTINGS) on the board: the old values are
    journaled there, so C(state=restored) (or the next sinkrate run, after a killed one) puts
    them back. Changed only when a value changes.
  - Check mode runs C(tune apply --dry-run) and changes nothing; with C(--diff), each
    setting's old and new value.
options:
  settings:
    description: Settings as sinkrate takes them (vm.NAME=VALUE, queue:ATTR=VALUE, mount:OPTION).
    type: list
    elements: str
  state:
    description: applied or restored.
    type: str
    default: applied
    choices: [applied, restored]
  path:
    description: The directory whose device and mount queue and mount settings apply to.
    type: str
  persist:
    description: Also make them last across reboots (sinkrate tune apply --persist).
    type: bool
    default: false
  binary:
    description: Where sinkrate is on the board.
    type: str
    default: /usr/local/bin/sinkrate
author: sinkrate
"""

EXAMPLES = r"""
- name: Seed 001's fix
  sinkrate.lab.tune:
    settings: [vm.dirty_expire_centisecs=100, vm.dirty_writeback_centisecs=100]
  notify: restore sinkrate settings
"""
