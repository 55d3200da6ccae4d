#!/usr/bin/env python3
"""Format files of kernels not at hand, laid out from each version's TRACE_EVENT definitions.

    python3 derive.py        rewrites the directories listed in KERNELS below

A format file's offsets are those of the kernel's `struct trace_event_raw_<event>`: the
common header (type, flags, preempt count, pid: 8 bytes), then each TP_STRUCT__entry field
at the next offset its type's alignment allows, a `__dynamic_array`/`__string` as a 4-byte
`__data_loc` word. This script lays the fields out by those C rules for the ABI given
(`long` and `unsigned long` 8 bytes on aarch64 and x86_64, 4 on 32-bit ARM, whose EABI
aligns a 64-bit `sector_t` to 8) and writes what the kernel's `f_show` would print. The
field lists are transcribed from each version's include/trace/events/*.h; the print fmts
keep the field references and, where sinkrate reads one (writeback's reason table), the
symbols as tracefs prints them once TRACE_DEFINE_ENUM has replaced the enum names with
their numbers. Other print fmts are shortened: sinkrate does not read them.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# (size, alignment, signed) of each C type on an ARM ABI (char unsigned), `long` by its word.
def types(word):
    return {
        "char": (1, 1, 0), "unsigned char": (1, 1, 0),
        "unsigned short": (2, 2, 0), "__u16": (2, 2, 0),
        "int": (4, 4, 1), "unsigned int": (4, 4, 0), "pid_t": (4, 4, 1), "dev_t": (4, 4, 0),
        "__u32": (4, 4, 0), "tid_t": (4, 4, 0),
        "long": (word, word, 1), "unsigned long": (word, word, 0), "ino_t": (word, word, 0),
        "pgoff_t": (word, word, 0),
        "sector_t": (8, 8, 0), "u64": (8, 8, 0),
    }

COMMON = [("unsigned short", "common_type"), ("unsigned char", "common_flags"),
          ("unsigned char", "common_preempt_count"), ("int", "common_pid")]


def layout(fields, word):
    t = types(word)
    out, at = [], 0
    for f in COMMON + fields:
        ctype, name = f[0], f[1]
        count = f[2] if len(f) > 2 else None
        if ctype == "__data_loc":
            size, align, signed = 4, 4, 1
            decl = f"__data_loc char[] {name}"
        else:
            size, align, signed = t[ctype]
            decl = f"{ctype} {name}"
            if count is not None:
                # Arrays print signed:0 (as this machine's 6.18 does for char bdi[32]).
                decl = f"{ctype} {name}[{count}]"
                size = size * count
                if ctype == "char":
                    signed = 0
        at = (at + align - 1) // align * align
        out.append((decl, at, size, signed))
        at += size
    return out


def write(directory, event, event_id, fields, word, print_fmt):
    lines = [f"name: {event.split('.')[1]}", f"ID: {event_id}", "format:"]
    rows = layout(fields, word)
    for i, (decl, off, size, signed) in enumerate(rows):
        lines.append(f"\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{signed};")
        if i == len(COMMON) - 1:
            lines.append("")
    lines.append("")
    lines.append(f"print fmt: {print_fmt}")
    path = os.path.join(HERE, directory, event)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def header_page(directory, word):
    text = (
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
        f"\tfield: local_t commit;\toffset:8;\tsize:{word};\tsigned:1;\n"
        f"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
        # ARM's char is unsigned.
        f"\tfield: char data;\toffset:{8 + word};\tsize:{4096 - 8 - word};\tsigned:0;\n"
    )
    os.makedirs(os.path.join(HERE, directory), exist_ok=True)
    with open(os.path.join(HERE, directory, "header_page"), "w") as f:
        f.write(text)


# Linux 4.9 (the Jetson TX2's L4T kernel), from include/trace/events/{writeback,sched,
# block,jbd2,syscalls}.h of 4.9: no wait_on_page_writeback yet (5.9 added it); the request's
# status is `errors` (renamed `error` in 4.13); jbd2's transaction an int and run_stats' tid
# an unsigned long; sched_wakeup still carries `success`; cgroup_ino an unsigned int.
WB_REASONS_4_9 = ('{ 0, "background" }, { 1, "try_to_free_pages" }, { 2, "sync" }, '
                  '{ 3, "periodic" }, { 4, "laptop_timer" }, { 5, "free_more_memory" }, '
                  '{ 6, "fs_free_space" }, { 7, "forker_thread" }')


def kernel_4_9(directory, word):
    header_page(directory, word)
    write(directory, "writeback.balance_dirty_pages", 404, [
        ("char", "bdi", 32), ("unsigned long", "limit"), ("unsigned long", "setpoint"),
        ("unsigned long", "dirty"), ("unsigned long", "bdi_setpoint"),
        ("unsigned long", "bdi_dirty"), ("unsigned long", "dirty_ratelimit"),
        ("unsigned long", "task_ratelimit"), ("unsigned int", "dirtied"),
        ("unsigned int", "dirtied_pause"), ("unsigned long", "paused"), ("long", "pause"),
        ("unsigned long", "period"), ("long", "think"), ("unsigned int", "cgroup_ino"),
    ], word, '"bdi %s: limit=%lu setpoint=%lu dirty=%lu bdi_setpoint=%lu bdi_dirty=%lu '
             'dirty_ratelimit=%lu task_ratelimit=%lu dirtied=%u dirtied_pause=%u paused=%lu '
             'pause=%ld period=%lu think=%ld cgroup_ino=%u", REC->bdi, REC->limit, '
             'REC->setpoint, REC->dirty, REC->bdi_setpoint, REC->bdi_dirty, '
             'REC->dirty_ratelimit, REC->task_ratelimit, REC->dirtied, REC->dirtied_pause, '
             'REC->paused, REC->pause, REC->period, REC->think, REC->cgroup_ino')
    work = [("char", "name", 32), ("long", "nr_pages"), ("dev_t", "sb_dev"),
            ("int", "sync_mode"), ("int", "for_kupdate"), ("int", "range_cyclic"),
            ("int", "for_background"), ("int", "reason"), ("unsigned int", "cgroup_ino")]
    work_fmt = ('"bdi %s: sb_dev %d:%d nr_pages=%ld sync_mode=%d kupdate=%d range_cyclic=%d '
                'background=%d reason=%s cgroup_ino=%u", REC->name, '
                '((unsigned int) ((REC->sb_dev) >> 20)), '
                '((unsigned int) ((REC->sb_dev) & ((1U << 20) - 1))), REC->nr_pages, '
                'REC->sync_mode, REC->for_kupdate, REC->range_cyclic, REC->for_background, '
                f'__print_symbolic(REC->reason, {WB_REASONS_4_9}), REC->cgroup_ino')
    write(directory, "writeback.writeback_start", 383, work, word, work_fmt)
    write(directory, "writeback.writeback_written", 382, work, word, work_fmt)
    commit = [("dev_t", "dev"), ("char", "sync_commit"), ("int", "transaction")]
    commit_fmt = ('"dev %d,%d transaction %d sync %d", ((unsigned int) ((REC->dev) >> 20)), '
                  '((unsigned int) ((REC->dev) & ((1U << 20) - 1))), REC->transaction, '
                  'REC->sync_commit')
    write(directory, "jbd2.jbd2_start_commit", 618, commit, word, commit_fmt)
    write(directory, "jbd2.jbd2_end_commit", 613, commit + [("int", "head")], word, commit_fmt)
    write(directory, "jbd2.jbd2_run_stats", 606, [
        ("dev_t", "dev"), ("unsigned long", "tid"), ("unsigned long", "wait"),
        ("unsigned long", "request_delay"), ("unsigned long", "running"),
        ("unsigned long", "locked"), ("unsigned long", "flushing"),
        ("unsigned long", "logging"), ("__u32", "handle_count"), ("__u32", "blocks"),
        ("__u32", "blocks_logged"),
    ], word, '"dev %d,%d tid %lu wait %u request_delay %u running %u locked %u flushing %u '
             'logging %u handle_count %u blocks %u blocks_logged %u", '
             '((unsigned int) ((REC->dev) >> 20)), '
             '((unsigned int) ((REC->dev) & ((1U << 20) - 1))), REC->tid, REC->wait, '
             'REC->request_delay, REC->running, REC->locked, REC->flushing, REC->logging, '
             'REC->handle_count, REC->blocks, REC->blocks_logged')
    write(directory, "block.block_rq_issue", 1030, [
        ("dev_t", "dev"), ("sector_t", "sector"), ("unsigned int", "nr_sector"),
        ("unsigned int", "bytes"), ("char", "rwbs", 8), ("char", "comm", 16),
        ("__data_loc", "cmd"),
    ], word, '"%d,%d %s %u (%s) %llu + %u [%s]", ((unsigned int) ((REC->dev) >> 20)), '
             '((unsigned int) ((REC->dev) & ((1U << 20) - 1))), REC->rwbs, REC->bytes, '
             '__get_str(cmd), (unsigned long long)REC->sector, REC->nr_sector, REC->comm')
    write(directory, "block.block_rq_complete", 1034, [
        ("dev_t", "dev"), ("sector_t", "sector"), ("unsigned int", "nr_sector"),
        ("int", "errors"), ("char", "rwbs", 8), ("__data_loc", "cmd"),
    ], word, '"%d,%d %s (%s) %llu + %u [%d]", ((unsigned int) ((REC->dev) >> 20)), '
             '((unsigned int) ((REC->dev) & ((1U << 20) - 1))), REC->rwbs, __get_str(cmd), '
             '(unsigned long long)REC->sector, REC->nr_sector, REC->errors')
    write(directory, "sched.sched_switch", 285, [
        ("char", "prev_comm", 16), ("pid_t", "prev_pid"), ("int", "prev_prio"),
        ("long", "prev_state"), ("char", "next_comm", 16), ("pid_t", "next_pid"),
        ("int", "next_prio"),
    ], word, '"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s '
             'next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, '
             'REC->prev_state & (4096-1) ? __print_flags(REC->prev_state & (4096-1), "|", '
             '{ 1, "S"} , { 2, "D" }, { 4, "T" }, { 8, "t" }, { 16, "Z" }, { 32, "X" }, '
             '{ 64, "x" }, { 128, "K" }, { 256, "W" }, { 512, "P" }, { 1024, "N" }) : "R", '
             'REC->prev_state & 4096 ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio')
    write(directory, "sched.sched_wakeup", 287, [
        ("char", "comm", 16), ("pid_t", "pid"), ("int", "prio"), ("int", "success"),
        ("int", "target_cpu"),
    ], word, '"comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, '
             'REC->target_cpu')
    write(directory, "raw_syscalls.sys_enter", 20, [
        ("long", "id"), ("unsigned long", "args", 6),
    ], word, '"NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)", REC->id, REC->args[0], REC->args[1], '
             'REC->args[2], REC->args[3], REC->args[4], REC->args[5]')
    write(directory, "raw_syscalls.sys_exit", 19, [
        ("long", "id"), ("long", "ret"),
    ], word, '"NR %ld = %ld", REC->id, REC->ret')


# The long-term kernels, from each version's include/trace/events/{writeback,sched,block,
# jbd2,syscalls}.h as released (4.4.121, 4.14.170, 4.19.124, 5.4.214, 5.10.44, 6.1.166,
# 6.6.63; 4.9 above): the
# events sinkrate reads kept their order and names there (balance_dirty_pages says
# `bdi_setpoint`/`bdi_dirty` through 6.6), and changed only in what each entry notes.
class Version:
    def __init__(self, name, wait=None, wait_ino="unsigned long", cgroup_ino="unsigned int",
                 tid="int", run_tid="unsigned long", wakeup_success=True, reasons=None,
                 status="error"):
        self.name = name
        # A request's status on completion: `errors` until 4.13.
        self.status = status
        # The writeback wait event: None (4.14 and 4.19 have none), wait_on_page_writeback
        # (5.4.214 and 5.10 have it, backported to 5.4's stable series) or
        # folio_wait_writeback (5.16 on).
        self.wait = wait
        self.wait_ino = wait_ino
        # The writeback cgroup: its path as a dynamic array on 4.4 ("__data_loc"), its
        # inode number later.
        self.cgroup_ino = cgroup_ino
        # jbd2's transaction (start/end commit) and run_stats' tid: int and unsigned long
        # until tid_t replaced both (5.11).
        self.tid = tid
        self.run_tid = run_tid
        # sched_wakeup's `success` (always 1): still in 5.10, gone by 6.1.
        self.wakeup_success = wakeup_success
        self.reasons = reasons


def reasons(names):
    return ", ".join(f'{{ {i}, "{n}" }}' for i, n in enumerate(names))


REASONS_4_4 = reasons(["background", "try_to_free_pages", "sync", "periodic", "laptop_timer",
                       "free_more_memory", "fs_free_space", "forker_thread"])
REASONS_4_14 = reasons(["background", "vmscan", "sync", "periodic", "laptop_timer",
                        "free_more_memory", "fs_free_space", "forker_thread"])
REASONS_5_10 = reasons(["background", "vmscan", "sync", "periodic", "laptop_timer",
                        "fs_free_space", "forker_thread"])
REASONS_6_1 = reasons(["background", "vmscan", "sync", "periodic", "laptop_timer",
                       "fs_free_space", "forker_thread", "foreign_flush"])

VERSIONS = {
    "4.4": Version("4.4", cgroup_ino="__data_loc", reasons=REASONS_4_4, status="errors"),
    "4.14": Version("4.14", reasons=REASONS_4_14),
    "4.19": Version("4.19", reasons=REASONS_4_14),
    "5.4": Version("5.4", wait="wait_on_page_writeback", reasons=REASONS_4_14),
    "5.10": Version("5.10", wait="wait_on_page_writeback", wait_ino="ino_t", cgroup_ino="ino_t",
                    reasons=REASONS_5_10),
    "6.1": Version("6.1", wait="folio_wait_writeback", wait_ino="ino_t", cgroup_ino="ino_t",
                   tid="tid_t", run_tid="tid_t", wakeup_success=False, reasons=REASONS_6_1),
    "6.6": Version("6.6", wait="folio_wait_writeback", wait_ino="ino_t", cgroup_ino="ino_t",
                   tid="tid_t", run_tid="tid_t", wakeup_success=False, reasons=REASONS_6_1),
}

DEV = "((unsigned int) ((REC->dev) >> 20)), ((unsigned int) ((REC->dev) & ((1U << 20) - 1)))"


def kernel(v):
    """Writes the format files of version `v` (a key of VERSIONS) for a board of `word`."""
    def derive(directory, word):
        k = VERSIONS[v]
        if k.cgroup_ino == "__data_loc":
            cgroup, cgroup_fmt, cgroup_arg = ("__data_loc", "cgroup"), "cgroup=%s", "__get_str(cgroup)"
        else:
            cgroup, cgroup_fmt, cgroup_arg = ((k.cgroup_ino, "cgroup_ino"), "cgroup_ino=%lu",
                                              "(unsigned long)REC->cgroup_ino")
        header_page(directory, word)
        write(directory, "writeback.balance_dirty_pages", 600, [
            ("char", "bdi", 32), ("unsigned long", "limit"), ("unsigned long", "setpoint"),
            ("unsigned long", "dirty"), ("unsigned long", "bdi_setpoint"),
            ("unsigned long", "bdi_dirty"), ("unsigned long", "dirty_ratelimit"),
            ("unsigned long", "task_ratelimit"), ("unsigned int", "dirtied"),
            ("unsigned int", "dirtied_pause"), ("unsigned long", "paused"), ("long", "pause"),
            ("unsigned long", "period"), ("long", "think"), cgroup,
        ], word, '"bdi %s: limit=%lu setpoint=%lu dirty=%lu bdi_setpoint=%lu bdi_dirty=%lu '
                 'dirty_ratelimit=%lu task_ratelimit=%lu dirtied=%u dirtied_pause=%u '
                 f'paused=%lu pause=%ld period=%lu think=%ld {cgroup_fmt}", REC->bdi, '
                 'REC->limit, REC->setpoint, REC->dirty, REC->bdi_setpoint, REC->bdi_dirty, '
                 'REC->dirty_ratelimit, REC->task_ratelimit, REC->dirtied, '
                 'REC->dirtied_pause, REC->paused, REC->pause, REC->period, REC->think, '
                 f'{cgroup_arg}')
        if k.wait:
            write(directory, f"writeback.{k.wait}", 601, [
                ("char", "name", 32), (k.wait_ino, "ino"), ("pgoff_t", "index"),
            ], word, '"bdi %s: ino=%lu index=%lu", REC->name, (unsigned long)REC->ino, '
                     'REC->index')
        work = [("char", "name", 32), ("long", "nr_pages"), ("dev_t", "sb_dev"),
                ("int", "sync_mode"), ("int", "for_kupdate"), ("int", "range_cyclic"),
                ("int", "for_background"), ("int", "reason"), cgroup]
        work_fmt = ('"bdi %s: sb_dev %d:%d nr_pages=%ld sync_mode=%d kupdate=%d '
                    f'range_cyclic=%d background=%d reason=%s {cgroup_fmt}", REC->name, '
                    '((unsigned int) ((REC->sb_dev) >> 20)), '
                    '((unsigned int) ((REC->sb_dev) & ((1U << 20) - 1))), REC->nr_pages, '
                    'REC->sync_mode, REC->for_kupdate, REC->range_cyclic, REC->for_background, '
                    f'__print_symbolic(REC->reason, {k.reasons}), {cgroup_arg}')
        write(directory, "writeback.writeback_start", 602, work, word, work_fmt)
        write(directory, "writeback.writeback_written", 603, work, word, work_fmt)
        commit = [("dev_t", "dev"), ("char", "sync_commit"), (k.tid, "transaction")]
        commit_fmt = (f'"dev %d,%d transaction %d sync %d", {DEV}, REC->transaction, '
                      'REC->sync_commit')
        write(directory, "jbd2.jbd2_start_commit", 610, commit, word, commit_fmt)
        write(directory, "jbd2.jbd2_end_commit", 611, commit + [(k.tid, "head")], word,
              f'"dev %d,%d transaction %d sync %d head %d", {DEV}, REC->transaction, '
              'REC->sync_commit, REC->head')
        write(directory, "jbd2.jbd2_run_stats", 612, [
            ("dev_t", "dev"), (k.run_tid, "tid"), ("unsigned long", "wait"),
            ("unsigned long", "request_delay"), ("unsigned long", "running"),
            ("unsigned long", "locked"), ("unsigned long", "flushing"),
            ("unsigned long", "logging"), ("__u32", "handle_count"), ("__u32", "blocks"),
            ("__u32", "blocks_logged"),
        ], word, f'"dev %d,%d tid %lu wait %u request_delay %u running %u locked %u '
                 'flushing %u logging %u handle_count %u blocks %u blocks_logged %u", '
                 f'{DEV}, REC->tid, REC->wait, REC->request_delay, REC->running, '
                 'REC->locked, REC->flushing, REC->logging, REC->handle_count, REC->blocks, '
                 'REC->blocks_logged')
        write(directory, "block.block_rq_issue", 620, [
            ("dev_t", "dev"), ("sector_t", "sector"), ("unsigned int", "nr_sector"),
            ("unsigned int", "bytes"), ("char", "rwbs", 8), ("char", "comm", 16),
            ("__data_loc", "cmd"),
        ], word, f'"%d,%d %s %u (%s) %llu + %u [%s]", {DEV}, REC->rwbs, REC->bytes, '
                 '__get_str(cmd), (unsigned long long)REC->sector, REC->nr_sector, REC->comm')
        write(directory, "block.block_rq_complete", 621, [
            ("dev_t", "dev"), ("sector_t", "sector"), ("unsigned int", "nr_sector"),
            ("int", k.status), ("char", "rwbs", 8), ("__data_loc", "cmd"),
        ], word, f'"%d,%d %s (%s) %llu + %u [%d]", {DEV}, REC->rwbs, __get_str(cmd), '
                 f'(unsigned long long)REC->sector, REC->nr_sector, REC->{k.status}')
        if k.name == "4.4":
            # 4.4 masks with TASK_STATE_MAX (2048) and names each flag; 4.14 on with
            # TASK_REPORT_MAX (0x100).
            state_fmt = ('REC->prev_state & (2048-1) ? __print_flags(REC->prev_state & (2048-1), '
                         '"|", { 1, "S"} , { 2, "D" }, { 4, "T" }, { 8, "t" }, { 16, "Z" }, '
                         '{ 32, "X" }, { 64, "x" }, { 128, "K" }, { 256, "W" }, { 512, "P" }, '
                         '{ 1024, "N" }) : "R", REC->prev_state & 2048 ? "+" : ""')
        else:
            state_fmt = ('(REC->prev_state & ((((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | '
                         '0x0010 | 0x0020 | 0x0040) + 1) << 1) - 1)) ? "S|D|T|t|X|Z|P|I" : "R", '
                         'REC->prev_state & (((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | '
                         '0x0010 | 0x0020 | 0x0040) + 1) << 1) ? "+" : ""')
        write(directory, "sched.sched_switch", 630, [
            ("char", "prev_comm", 16), ("pid_t", "prev_pid"), ("int", "prev_prio"),
            ("long", "prev_state"), ("char", "next_comm", 16), ("pid_t", "next_pid"),
            ("int", "next_prio"),
        ], word, '"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s '
                 'next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, '
                 f'{state_fmt}, REC->next_comm, REC->next_pid, REC->next_prio')
        wakeup = [("char", "comm", 16), ("pid_t", "pid"), ("int", "prio")]
        if k.wakeup_success:
            wakeup.append(("int", "success"))
        wakeup.append(("int", "target_cpu"))
        write(directory, "sched.sched_wakeup", 631, wakeup, word,
              '"comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, '
              'REC->target_cpu')
        write(directory, "raw_syscalls.sys_enter", 21, [
            ("long", "id"), ("unsigned long", "args", 6),
        ], word, '"NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)", REC->id, REC->args[0], '
                 'REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]')
        write(directory, "raw_syscalls.sys_exit", 20, [
            ("long", "id"), ("long", "ret"),
        ], word, '"NR %ld = %ld", REC->id, REC->ret')
    return derive


KERNELS = [
    ("4.4-armv7", kernel("4.4"), 4),
    ("4.9-aarch64", kernel_4_9, 8),
    ("4.14-aarch64", kernel("4.14"), 8),
    ("4.19-aarch64", kernel("4.19"), 8),
    ("5.4-aarch64", kernel("5.4"), 8),
    ("5.10-aarch64", kernel("5.10"), 8),
    ("5.10-armv7", kernel("5.10"), 4),
    ("6.1-aarch64", kernel("6.1"), 8),
    ("6.1-armv7", kernel("6.1"), 4),
    ("6.6-aarch64", kernel("6.6"), 8),
]

if __name__ == "__main__":
    for directory, derive, word in KERNELS:
        derive(directory, word)
        print(f"wrote {directory}")
