"""A recorder that writes its files without write(2): sendfile, copy_file_range and
splice from another descriptor, pwritev2 with RWF_DSYNC, O_DIRECT set with fcntl after the
open, and renameat2(RENAME_EXCHANGE). Used by the capture tests: each must be traced and
replayed, or named as not seen."""
import os, sys, ctypes, fcntl, mmap
d = sys.argv[1]
src = os.path.join(d, "src.bin")
with open(src, "wb") as f:
    f.write(b"s" * 108192)
libc = ctypes.CDLL(None, use_errno=True)
# sendfile: the whole source into a.bin
a = os.open(os.path.join(d, "a.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
s = os.open(src, os.O_RDONLY)
os.write(a, b"h" * 200)
n = os.sendfile(a, s, 0, 108192)
# copy_file_range at explicit offsets (count, source offset, destination offset)
b = os.open(os.path.join(d, "b.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.copy_file_range(s, b, 50000, 0, 4096)
os.copy_file_range(s, b, 50000, 0, 8192)
# splice through a pipe
r, w = os.pipe()
os.write(w, b"p" * 30000)
c = os.open(os.path.join(d, "c.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.splice(r, c, 30000)
# pwritev2 with RWF_DSYNC
e = os.open(os.path.join(d, "e.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.pwritev(e, [b"d" * 4096], 0, os.RWF_DSYNC)
# O_DIRECT set later with fcntl
g = os.open(os.path.join(d, "g.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
fl = fcntl.fcntl(g, fcntl.F_GETFL)
fcntl.fcntl(g, fcntl.F_SETFL, fl | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
buf.write(b"x" * 4096)
os.write(g, buf)
# renameat2 RENAME_EXCHANGE: x.bin and y.bin swap
for name, size in (("x.bin", 1000), ("y.bin", 3000)):
    with open(os.path.join(d, name), "wb") as f:
        f.write(b"z" * size)
AT_FDCWD = -100
rc = libc.renameat2(AT_FDCWD, os.path.join(d, "x.bin").encode(), AT_FDCWD, os.path.join(d, "y.bin").encode(), 2)
assert rc == 0, ctypes.get_errno()
for fd in (a, b, c, e, g, s):
    os.close(fd)
os.unlink(src)
