# The documentation of sinkrate.lab.run; the work is done by its action plugin
# (plugins/action/run.py), on the controller, so the board needs no Python.
DOCUMENTATION = r"""
module: run
short_description: Run a sinkrate command on a board and bring its result back
description:
  - Runs C(sinkrate COMMAND ARGS --output-format json) on the board in a temporary directory
    of its own (removed afterwards), saves the result as C(RESULTS_DIR/HOST/NAME-TIME.json) on
    the controller, and returns its top-level fields (verdict, headroom, exit code, error) to
    test with C(when).
  - Exit codes 0, 1 and 3 are answers (it holds, it does not, not judged); any other fails the
    task with the board's own error line.
  - Reaches the board through the connection's shell only; nothing but the sinkrate binary is
    needed there.
options:
  command:
    description: The sinkrate command.
    type: str
    required: true
    choices: [check, record, verify, suite, audit, bench, tune-search]
  args:
    description: Its arguments, as a list or one string; not C(--output-format) or C(--output).
    type: raw
    default: []
  binary:
    description: Where sinkrate is on the board.
    type: str
    default: /usr/local/bin/sinkrate
  results_dir:
    description: The controller's folder for the results, relative to the playbook.
    type: str
    default: results
  name:
    description: The result file's name before its time (default the command).
    type: str
author: sinkrate
"""

EXAMPLES = r"""
- name: Can this card keep up?
  sinkrate.lab.run:
    command: check
    args: [/media/sd, --quick]
  register: sinkrate_check

- name: Say which boards did not keep up
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }}: {{ sinkrate_check.verdict }}"
  when: sinkrate_check.verdict != 'keeps_up'
"""

RETURN = r"""
verdict:
  description: The run's verdict (keeps_up, drops, falling_behind, failed, not_storage...).
  type: str
  returned: when the command gives one
rc:
  description: sinkrate's exit code.
  type: int
results_file:
  description: Where the result was saved on the controller.
  type: str
error:
  description: The run's error (what, at_s), null when it completed.
  type: dict
"""
