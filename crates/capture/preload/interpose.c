/*
 * sinkrate capture's interposer: loaded into a dynamically linked recorder with LD_PRELOAD,
 * it takes the recorder's write, positional and vectored writes and syncs (the calls made
 * once a frame), makes each system call itself, and sends what the call did, with its start
 * and end on CLOCK_MONOTONIC, to the capture over a pipe: a few system calls a write
 * instead of two ptrace stops and four context switches.
 *
 * Completeness does not depend on it. The capture's seccomp filter stops every file call
 * for the tracer unless its sixth argument register holds SINKRATE_MARK, which only the
 * calls made here carry (none of these calls has a sixth argument). A call that does not
 * come through here (stdio's own writes inside libc, syscall(2), a static program, a
 * program started with LD_PRELOAD cleared) stops for the tracer as before. When the pipe
 * is lost (the recorder closes or replaces its descriptor) or cannot be checked, every call
 * is made unmarked and the tracer sees it.
 *
 * Built without a C library (-nostdlib) so that one object serves recorders linked against
 * glibc or musl: the system calls are made directly, and the only symbols taken from the
 * recorder's C library are errno's location and environ, which both export.
 * Written by hand: no library interposes these calls for a tracer.
 */

typedef unsigned long u_long;
typedef long s_long;
typedef unsigned long long u64;
typedef long long s64;
typedef unsigned int u32;
typedef __SIZE_TYPE__ size_t;
typedef long ssize_t;
struct iovec;

extern int *__errno_location(void);
extern char **environ;

#if defined(__x86_64__)
#define NR_write 1
#define NR_pwrite64 18
#define NR_writev 20
#define NR_pwritev 296
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_sync_file_range 277
#define NR_lseek 8
#define NR_fstat 5
#define INO_AT 8
#define NR_close 3
#define NR_dup2 33
#define NR_dup3 292
#define NR_close_range 436
#define NR_gettid 186
#define NR_getpid 39
#define NR_clock_gettime 228
#define NR_readlinkat 267
#define MARK 0x51f4a7e5c0de0001ULL
#elif defined(__aarch64__)
#define NR_write 64
#define NR_pwrite64 68
#define NR_writev 66
#define NR_pwritev 70
#define NR_fsync 82
#define NR_fdatasync 83
#define NR_sync_file_range 84
#define NR_lseek 62
#define NR_fstat 80
#define INO_AT 8
#define NR_close 57
#define NR_dup3 24
#define NR_close_range 436
#define NR_gettid 178
#define NR_getpid 172
#define NR_clock_gettime 113
#define NR_readlinkat 78
#define MARK 0x51f4a7e5c0de0001ULL
#elif defined(__arm__)
#define NR_write 4
#define NR_writev 146
#define NR_pwritev 361
#define NR_fsync 118
#define NR_fdatasync 148
#define NR_lseek 19
#define NR_fstat 197 /* fstat64: the low half of the inode at 12 (__st_ino) */
#define INO_AT 12
#define NR_close 6
#define NR_dup2 63
#define NR_dup3 358
#define NR_close_range 436
#define NR_gettid 224
#define NR_getpid 20
#define NR_clock_gettime 263
#define NR_readlinkat 332
/* Above user space in a 3 GB split and not a negative errno: not a value a register
 * left over from other work is likely to hold. */
#define MARK 0xf1a7c0deUL
#else
#error "interpose.c: an architecture the capture does not build for"
#endif

/* The call kinds as the capture reads them (crates/capture/src/preload.rs). */
enum { K_WRITE = 1, K_PWRITE = 2, K_WRITEV = 3, K_PWRITEV = 4, K_FSYNC = 5, K_FDATASYNC = 6,
       K_SYNC_FILE_RANGE = 7 };

/* One call, 72 bytes: a pipe takes a write of at most PIPE_BUF whole, so records of
 * several threads and processes never interleave. */
struct record {
    u32 magic;   /* 0x53524331, "SRC1": the layout's version */
    u32 kind;    /* the call, and in the bits above the lowest eight its flags */
    s64 pid;
    s64 tid;
    s64 fd;
    s64 ret;     /* the call's result, or -errno */
    u64 offset;  /* a write's offset, a range's start; ~0 when the position was not known */
    u64 len;     /* a range's length; a write's bytes are its result */
    u64 t_ns;    /* CLOCK_MONOTONIC at the call's start and end */
    u64 end_ns;
};

#define RECORD_MAGIC 0x53524331u
#define UNKNOWN ((u64)-1)

static s_long sys6(s_long nr, s_long a, s_long b, s_long c, s_long d, s_long e, s_long f)
{
#if defined(__x86_64__)
    s_long ret;
    register s_long r10 __asm__("r10") = d;
    register s_long r8 __asm__("r8") = e;
    register s_long r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register s_long x8 __asm__("x8") = nr;
    register s_long x0 __asm__("x0") = a;
    register s_long x1 __asm__("x1") = b;
    register s_long x2 __asm__("x2") = c;
    register s_long x3 __asm__("x3") = d;
    register s_long x4 __asm__("x4") = e;
    register s_long x5 __asm__("x5") = f;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    return x0;
#elif defined(__arm__)
    register s_long r7 __asm__("r7") = nr;
    register s_long r0 __asm__("r0") = a;
    register s_long r1 __asm__("r1") = b;
    register s_long r2 __asm__("r2") = c;
    register s_long r3 __asm__("r3") = d;
    register s_long r4 __asm__("r4") = e;
    register s_long r5 __asm__("r5") = f;
    __asm__ volatile("svc 0"
                     : "+r"(r0)
                     : "r"(r7), "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5)
                     : "memory");
    return r0;
#endif
}

/* The pipe's descriptor, or -1: not set up, not ours, or lost; and its inode. */
static volatile int channel = -1;
static u32 channel_ino;

static s_long sys_plain(s_long nr, s_long a, s_long b, s_long c)
{
    return sys6(nr, a, b, c, 0, 0, 0);
}

/* Checked before each call is made marked: a call made marked and then not reported would
 * be lost to the trace. */
static int still_the_pipe(int fd);

/* The channel's descriptor, checked, or -1. Each call takes it once: a call made marked is
 * reported on that descriptor even if another thread loses the channel meanwhile. */
static int ready(void)
{
    int ch = channel;
    if (ch < 0)
        return -1;
    if (!still_the_pipe(ch)) {
        channel = -1;
        return -1;
    }
    return ch;
}

/* A call the tracer does not stop for (it is reported here). */
static s_long sys_marked(s_long nr, s_long a, s_long b, s_long c, s_long d, s_long e)
{
    return sys6(nr, a, b, c, d, e, (s_long)MARK);
}

static long result(s_long r)
{
    if (r < 0 && r > -4096) {
        *__errno_location() = (int)-r;
        return -1;
    }
    return r;
}

static u64 now_ns(void)
{
    struct { s_long sec; s_long nsec; } ts;
    /* CLOCK_MONOTONIC (1), the clock the capture times its own stops on. On 32-bit ARM
     * this call takes a 32-bit time, good for 68 years of uptime. */
    if (sys_plain(NR_clock_gettime, 1, (s_long)&ts, 0) != 0)
        return 0;
    return (u64)ts.sec * 1000000000ULL + (u64)ts.nsec;
}

/* Whether descriptor `fd` is still the pipe: a recorder that closed it without going
 * through close() here (closefrom() inside the C library) may have opened a file of its
 * own under the number, and a record must never land in the recorder's files. (The low
 * 32 bits of the inode: a pipe's inode number is an unsigned int.) */
static int still_the_pipe(int fd)
{
    u64 st[24];
    if (sys_plain(NR_fstat, fd, (s_long)st, 0) != 0)
        return 0;
    u32 ino;
    __builtin_memcpy(&ino, (char *)st + INO_AT, sizeof ino);
    return ino == channel_ino;
}

static void send(int ch, u32 kind, int fd, s_long ret, u64 offset, u64 len, u64 t0, u64 t1)
{
    struct record r;
    r.magic = RECORD_MAGIC;
    r.kind = kind;
    r.pid = sys_plain(NR_getpid, 0, 0, 0);
    r.tid = sys_plain(NR_gettid, 0, 0, 0);
    r.fd = fd;
    r.ret = ret;
    r.offset = offset;
    r.len = len;
    r.t_ns = t0;
    r.end_ns = t1;
    int saved = *__errno_location();
    s_long w;
    do {
        w = sys6(NR_write, ch, (s_long)&r, sizeof r, 0, 0, (s_long)MARK);
    } while (w == -4 /* EINTR */);
    if (w != (s_long)sizeof r)
        channel = -1; /* the reader is gone: from now on the tracer sees every call */
    *__errno_location() = saved;
}

/* The position after a write, less what it wrote: where it went (O_APPEND included).
 * Fails (ESPIPE) on pipes and sockets, which are then not sent. */
static u64 written_at(int fd, s_long ret, int *seekable)
{
    s_long pos = sys_plain(NR_lseek, fd, 0, 1 /* SEEK_CUR */);
    *seekable = pos >= 0;
    if (pos < 0)
        return UNKNOWN;
    return ret > 0 ? (u64)pos - (u64)ret : (u64)pos;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    int ch = ready();
    if (ch < 0)
        return result(sys_plain(NR_write, fd, (s_long)buf, (s_long)n));
    u64 t0 = now_ns();
    s_long r = sys_marked(NR_write, fd, (s_long)buf, (s_long)n, 0, 0);
    u64 t1 = now_ns();
    int seekable;
    u64 at = written_at(fd, r, &seekable);
    if (seekable)
        send(ch, K_WRITE, fd, r, at, n, t0, t1);
    return result(r);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    int ch = ready();
    if (ch < 0)
        return result(sys_plain(NR_writev, fd, (s_long)iov, cnt));
    u64 t0 = now_ns();
    s_long r = sys_marked(NR_writev, fd, (s_long)iov, cnt, 0, 0);
    u64 t1 = now_ns();
    int seekable;
    u64 at = written_at(fd, r, &seekable);
    if (seekable)
        send(ch, K_WRITEV, fd, r, at, 0, t0, t1);
    return result(r);
}

#if defined(__x86_64__) || defined(__aarch64__)
/* 32-bit ARM passes a pwrite's offset in a register pair that takes the sixth argument:
 * there, pwrite is left to the tracer. */
ssize_t pwrite(int fd, const void *buf, size_t n, s64 off)
{
    int ch = ready();
    if (ch < 0)
        return result(sys6(NR_pwrite64, fd, (s_long)buf, (s_long)n, off, 0, 0));
    u64 t0 = now_ns();
    s_long r = sys_marked(NR_pwrite64, fd, (s_long)buf, (s_long)n, off, 0);
    u64 t1 = now_ns();
    send(ch, K_PWRITE, fd, r, (u64)off, n, t0, t1);
    return result(r);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, s64 off) __attribute__((alias("pwrite")));

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, s64 off)
{
    int ch = ready();
    if (ch < 0)
        return result(sys6(NR_pwritev, fd, (s_long)iov, cnt, off, 0, 0));
    u64 t0 = now_ns();
    /* pwritev's offset in two halves, low then high (on 64-bit, the whole in the first). */
    s_long r = sys_marked(NR_pwritev, fd, (s_long)iov, cnt, off, 0);
    u64 t1 = now_ns();
    send(ch, K_PWRITEV, fd, r, (u64)off, 0, t0, t1);
    return result(r);
}
ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, s64 off) __attribute__((alias("pwritev")));

int sync_file_range(int fd, s64 off, s64 n, unsigned flags)
{
    int ch = ready();
    if (ch < 0)
        return (int)result(sys6(NR_sync_file_range, fd, off, n, flags, 0, 0));
    u64 t0 = now_ns();
    s_long r = sys_marked(NR_sync_file_range, fd, off, n, flags, 0);
    u64 t1 = now_ns();
    send(ch, K_SYNC_FILE_RANGE | (flags << 8), fd, r, (u64)off, (u64)n, t0, t1);
    return (int)result(r);
}
#endif

int fsync(int fd)
{
    int ch = ready();
    if (ch < 0)
        return (int)result(sys_plain(NR_fsync, fd, 0, 0));
    u64 t0 = now_ns();
    s_long r = sys_marked(NR_fsync, fd, 0, 0, 0, 0);
    u64 t1 = now_ns();
    send(ch, K_FSYNC, fd, r, UNKNOWN, 0, t0, t1);
    return (int)result(r);
}

int fdatasync(int fd)
{
    int ch = ready();
    if (ch < 0)
        return (int)result(sys_plain(NR_fdatasync, fd, 0, 0));
    u64 t0 = now_ns();
    s_long r = sys_marked(NR_fdatasync, fd, 0, 0, 0, 0);
    u64 t1 = now_ns();
    send(ch, K_FDATASYNC, fd, r, UNKNOWN, 0, t0, t1);
    return (int)result(r);
}

/* The recorder closing or replacing the pipe's descriptor (a daemon closing what it
 * inherited) loses the channel: every call after is seen by the tracer instead. */
int close(int fd)
{
    if (fd == channel)
        channel = -1;
    return (int)result(sys_plain(NR_close, fd, 0, 0));
}

int dup3(int from, int to, int flags)
{
    if (to == channel)
        channel = -1;
    return (int)result(sys_plain(NR_dup3, from, to, flags));
}

int dup2(int from, int to)
{
    if (to == channel && from != to)
        channel = -1;
#if defined(__aarch64__)
    if (from == to) /* dup2 of a descriptor onto itself checks it; dup3 refuses that */
        return (int)result(sys_plain(NR_lseek, from, 0, 1) == -9 ? -9 : from);
    return (int)result(sys_plain(NR_dup3, from, to, 0));
#else
    return (int)result(sys_plain(NR_dup2, from, to, 0));
#endif
}

int close_range(unsigned first, unsigned last, int flags)
{
    /* CLOSE_RANGE_CLOEXEC (4) closes nothing now. */
    if (!(flags & 4) && channel >= 0 && (unsigned)channel >= first && (unsigned)channel <= last)
        channel = -1;
    return (int)result(sys_plain(NR_close_range, first, last, flags));
}

static int starts_with(const char *s, const char *prefix, const char **rest)
{
    while (*prefix)
        if (*s++ != *prefix++)
            return 0;
    *rest = s;
    return 1;
}

/* SINKRATE_CAPTURE_CHANNEL=FD:pipe:[INODE]: the descriptor, and what it must be (a program
 * that closed it and opened something else under its number is left to the tracer). */
__attribute__((constructor)) static void find_channel(void)
{
    const char *value = 0;
    for (char **e = environ; e && *e; e++)
        if (starts_with(*e, "SINKRATE_CAPTURE_CHANNEL=", &value))
            break;
    if (!value)
        return;
    /* The path /proc/self/fd/FD, from the digits as given (no division: 32-bit ARM has
     * none in hardware, and this object links no helper library). */
    char self[40];
    const char *prefix = "/proc/self/fd/";
    int at = 0;
    while (prefix[at]) {
        self[at] = prefix[at];
        at++;
    }
    int fd = 0;
    for (; *value >= '0' && *value <= '9' && at < 30; value++) {
        fd = fd * 10 + (*value - '0');
        self[at++] = *value;
    }
    self[at] = 0;
    if (*value++ != ':' || fd < 3)
        return;
    char link[64];
    s_long n = sys6(NR_readlinkat, -100 /* AT_FDCWD */, (s_long)self, (s_long)link, sizeof link - 1, 0, 0);
    if (n <= 0)
        return;
    link[n] = 0;
    const char *a = link, *b = value;
    while (*a && *a == *b)
        a++, b++;
    if (*a != 0 || *b != 0)
        return;
    /* pipe:[INODE] */
    const char *digit = value;
    while (*digit && (*digit < '0' || *digit > '9'))
        digit++;
    u32 ino = 0;
    for (; *digit >= '0' && *digit <= '9'; digit++)
        ino = ino * 10 + (u32)(*digit - '0');
    channel_ino = ino;
    if (still_the_pipe(fd))
        channel = fd;
}
