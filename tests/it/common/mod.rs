//! Helpers shared by the integration tests: the sinkrate binary, fio, root detection with
//! recorded SKIPs, and loop devices with real filesystems that are torn down on drop.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

pub fn sinkrate() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("sinkrate").expect("sinkrate binary is built");
    c.arg("bench").arg("--eta=never");
    c
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Records a skipped test: printed, and appended to $SINKRATE_SKIP_LOG so the test script
/// fails when a root test was skipped while running as root.
pub fn skip(test: &str, reason: &str) {
    eprintln!("SKIP {test}: {reason}");
    if let Ok(path) = std::env::var("SINKRATE_SKIP_LOG") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "SKIP {test}: {reason}");
        }
    }
}

pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool} >/dev/null 2>&1"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Runs `f` only as root with the given tools present; otherwise records a SKIP.
pub fn with_root(test: &str, tools: &[&str], f: impl FnOnce()) {
    if !is_root() {
        skip(test, "needs root (loop devices, mounts)");
        return;
    }
    for t in tools {
        if !have(t) {
            skip(
                test,
                &format!("needs '{t}' (scripts/install-deps.sh --test installs it)"),
            );
            return;
        }
    }
    f();
}

/// `sinkrate report` of one result (`json`, written to a file in `dir`): the HTML page.
pub fn report_html(dir: &Path, json: &[u8]) -> String {
    let input = dir.join("result-for-the-report.json");
    let page = dir.join("result-for-the-report.html");
    std::fs::write(&input, json).expect("test setup");
    let out = Command::new(sinkrate_path())
        .arg("report")
        .arg(&input)
        .arg("-o")
        .arg(&page)
        .output()
        .expect("sinkrate report runs");
    assert!(
        out.status.success(),
        "report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).expect("the report page");
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&page);
    html
}

pub fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Loop devices are a machine-wide resource; tests in one binary take turns setting them up.
static LOOP_SETUP: Mutex<()> = Mutex::new(());

/// A loop device over a sparse image file, detached on drop.
pub struct LoopDevice {
    pub path: PathBuf,
    /// A tmpfs under `dir` holding the image ([`LoopDevice::in_memory`]); unmounted after
    /// the device is detached (fields drop after `drop`).
    memory: Option<MemoryFs>,
    pub dir: tempfile::TempDir,
}

impl LoopDevice {
    pub fn new(size: &str, partitioned: bool) -> LoopDevice {
        Self::with_image(size, partitioned, None)
    }

    /// A loop device whose image lives in memory (a tmpfs of its own): its rate is set by
    /// what is put above it (a blkio throttle), not by the machine's disk, which other
    /// writers share.
    pub fn in_memory(size: &str) -> LoopDevice {
        Self::with_image(size, false, Some(size))
    }

    fn with_image(size: &str, partitioned: bool, memory: Option<&str>) -> LoopDevice {
        let dir = tempfile::tempdir().expect("tempdir");
        let memory = memory.map(|size| MemoryFs::new(&dir.path().join("memory"), size));
        let image = match &memory {
            Some(m) => m.at.join("disk.img"),
            None => dir.path().join("disk.img"),
        };
        run("truncate", &["-s", size, image.to_str().expect("utf8")]);
        if partitioned {
            let mut child = Command::new("sfdisk")
                .args(["--quiet", image.to_str().expect("utf8")])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("sfdisk");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(b"label: dos\nstart=2048, type=83\n")
                .expect("write");
            assert!(child.wait().expect("sfdisk").success());
        }
        let _guard = LOOP_SETUP.lock().unwrap_or_else(|p| p.into_inner());
        let mut args = vec!["-f", "--show"];
        if partitioned {
            args.push("-P");
        }
        let image_s = image.to_str().expect("utf8").to_string();
        args.push(&image_s);
        let path = PathBuf::from(run("losetup", &args));
        if partitioned {
            // Partition nodes may appear a moment later; partition() waits for them.
            let _ = Command::new("udevadm").arg("settle").status();
        }
        LoopDevice { path, memory, dir }
    }

    pub fn partition(&self, n: u32) -> PathBuf {
        let p = PathBuf::from(format!("{}p{n}", self.path.display()));
        for attempt in 0..50 {
            if attempt == 5 && !p.exists() {
                // Some kernels skip the partition scan that losetup -P asks for.
                let _ = Command::new("partx").arg("-a").arg(&self.path).status();
            }
            if p.exists() {
                return p;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("{} did not appear", p.display());
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
    }
}

/// A real filesystem on a loop device, mounted on a temporary directory; unmounted and
/// detached on drop (also when the test panics).
pub struct ScratchFs {
    pub mountpoint: tempfile::TempDir,
    pub device: PathBuf,
    pub loopdev: LoopDevice,
}

impl ScratchFs {
    pub fn new(size: &str, fs: &str, mount_opts: &str) -> ScratchFs {
        let loopdev = LoopDevice::new(size, false);
        // Direct I/O from the loop device to its image, so the page cache is only the one
        // above the filesystem under test, as on a real device.
        run(
            "losetup",
            &["--direct-io=on", loopdev.path.to_str().expect("utf8")],
        );
        Self::on(loopdev, fs, mount_opts)
    }

    /// As [`ScratchFs::new`], on a loop device whose image is in memory (no page cache of
    /// the image's own to bypass: tmpfs is that memory).
    pub fn in_memory(size: &str, fs: &str, mount_opts: &str) -> ScratchFs {
        Self::on(LoopDevice::in_memory(size), fs, mount_opts)
    }

    fn on(loopdev: LoopDevice, fs: &str, mount_opts: &str) -> ScratchFs {
        let device = loopdev.path.clone();
        mkfs(fs, &device);
        let mountpoint = tempfile::tempdir().expect("tempdir");
        mount(&device, mountpoint.path(), mount_opts);
        ScratchFs {
            mountpoint,
            device,
            loopdev,
        }
    }

    pub fn path(&self) -> &Path {
        self.mountpoint.path()
    }

    /// The loop device's name (`loop3`), as /sys/block knows it.
    pub fn device_name(&self) -> String {
        self.device
            .file_name()
            .expect("a device path")
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for ScratchFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mountpoint.path()).status();
    }
}

/// A tmpfs mounted on a new directory `at` (made here, removed on drop with the mount).
pub struct MemoryFs {
    pub at: PathBuf,
}

impl MemoryFs {
    pub fn new(at: &Path, size: &str) -> MemoryFs {
        std::fs::create_dir(at).expect("mount point");
        run(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "tmpfs",
                at.to_str().expect("utf8"),
            ],
        );
        MemoryFs {
            at: at.to_path_buf(),
        }
    }
}

impl Drop for MemoryFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.at).status();
        let _ = std::fs::remove_dir(&self.at);
    }
}

/// A lock over what the machine's mount table may hold, shared by every process of the tests
/// (the lanes of scripts/test.sh run tests/it three times at once).
///
/// A test that makes an emulated card vanish (its nbdkit killed) leaves, until the card comes
/// down, a mounted filesystem on a loop device whose backing file lies on a FUSE mount whose
/// server has exited: stat(2) of that file answers ENOTCONN. mkfs.btrfs stats the backing file
/// of every mounted loop device before it formats anything, and refuses ("cannot check mount
/// status of /dev/loopN: Transport endpoint is not connected"), whichever device it was given.
/// So a test that formats btrfs (itself, or through a suite) holds this lock shared, and a
/// test whose card vanishes holds it alone from before the card is made until it is down.
pub struct LanesLock {
    /// Closing it lets the lock go (the same type holds every lock the lanes share).
    _held: std::fs::File,
}

fn mount_table_lock(operation: libc::c_int) -> LanesLock {
    lanes_lock("mount-table.lock", operation)
}

/// A lock named `name` that every process of the tests shares (flock(2), `operation`
/// LOCK_SH or LOCK_EX), held until the value is dropped.
fn lanes_lock(name: &str, operation: libc::c_int) -> LanesLock {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    // Cargo's scratch directory for integration tests, under target/: one for every lane.
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: flock(2) on a descriptor this function owns; it blocks until granted.
    let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
    assert_eq!(rc, 0, "flock {}", path.display());
    LanesLock { _held: file }
}

/// Held by a test whose emulated card vanishes, declared before the card (so that it is
/// dropped after the card is down).
pub fn a_card_vanishes_here() -> LanesLock {
    mount_table_lock(libc::LOCK_EX)
}

/// Held shared while `trace-cmd extract` may run: it turns off every event of the top-level
/// trace buffer when it ends (other instances it leaves alone).
pub fn trace_cmd_runs_here() -> LanesLock {
    lanes_lock("top-level-trace.lock", libc::LOCK_SH)
}

/// Held alone by a test that sets up the top-level trace buffer as another tracer would and
/// checks that it stays so.
pub fn the_top_level_trace_is_set_here() -> LanesLock {
    lanes_lock("top-level-trace.lock", libc::LOCK_EX)
}

/// Held while mkfs.btrfs runs, in the test or in the sinkrate run it starts.
pub fn btrfs_is_made_here() -> LanesLock {
    mount_table_lock(libc::LOCK_SH)
}

pub fn mkfs(fs: &str, device: &Path) {
    let dev = device.to_str().expect("utf8");
    match fs {
        "ext4" => run("mkfs.ext4", &["-q", "-F", dev]),
        "xfs" => run("mkfs.xfs", &["-q", "-f", dev]),
        "btrfs" => {
            let _no_card_vanishes = btrfs_is_made_here();
            run("mkfs.btrfs", &["-q", "-f", dev])
        }
        other => panic!("no mkfs for {other}"),
    };
}

pub fn mount(device: &Path, at: &Path, opts: &str) {
    let mut args = vec![device.to_str().expect("utf8"), at.to_str().expect("utf8")];
    if !opts.is_empty() {
        args.insert(0, opts);
        args.insert(0, "-o");
    }
    run("mount", &args);
}

/// Runs fio with `args` in `dir` and returns its JSON.
pub fn fio_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new("fio")
        .current_dir(dir)
        // First: given after job options, fio prints a job line before the JSON.
        .arg("--output-format=json")
        .args(args)
        .fio_output();
    assert!(
        out.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("fio JSON: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The JSON document in `stdout` after any lines of text before it (fio prints a failed
/// job's error line, or its NBD engine's greeting, before its JSON); `Null` when none.
pub fn json_after_text(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    text.find('{')
        .and_then(|at| serde_json::from_str(&text[at..]).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// Runs sinkrate bench with `args` in `dir` and returns its JSON.
pub fn sinkrate_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = sinkrate()
        .current_dir(dir)
        .args(args)
        .arg("--output-format=json")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "sinkrate failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("sinkrate JSON")
}

pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A cgroup-v1 blkio group that caps direct writes to one device, so a job is truly
/// device-bound. (It does not slow buffered writeback; the emulated slow device does.)
pub struct WriteThrottle {
    dir: PathBuf,
}

impl WriteThrottle {
    pub fn new(device: &Path, bytes_per_s: u64) -> Option<WriteThrottle> {
        use std::os::unix::fs::MetadataExt;
        let base = Path::new("/sys/fs/cgroup/blkio");
        if !base.join("blkio.throttle.write_bps_device").exists() {
            return None;
        }
        let rdev = std::fs::metadata(device).ok()?.rdev();
        let dir = base.join(format!("sinkrate-test-{}-{}", std::process::id(), rdev));
        std::fs::create_dir_all(&dir).ok()?;
        let rule = format!("{}:{} {bytes_per_s}", libc::major(rdev), libc::minor(rdev));
        std::fs::write(dir.join("blkio.throttle.write_bps_device"), rule).ok()?;
        Some(WriteThrottle { dir })
    }

    /// Runs `program args...` inside the group and returns its standard output.
    ///
    /// blk-throttle budgets a group in slices (`throtl_slice`, 100 ms on a disk, in
    /// block/blk-throttle.c) and a slice that has not ended credits its idle time to the
    /// next I/O: a run started right after another began with the previous run's unused
    /// budget and finished up to 10% early (fio 1,008 ms, sinkrate 904-959 ms right after
    /// it; both 1,008 ms with a pause between). Each run starts on a fresh slice.
    pub fn run_json(&self, cwd: &Path, program: &Path, args: &[&str]) -> serde_json::Value {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let out = Command::new("sh")
            .current_dir(cwd)
            .arg("-c")
            .arg("echo $$ > \"$0\" && exec \"$@\"")
            .arg(self.dir.join("cgroup.procs"))
            .arg(program)
            .args(args)
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    }
}

impl Drop for WriteThrottle {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// `sinkrate SUBCOMMAND ARGS`: its exit code, standard output and standard error.
pub fn sinkrate_sub(subcommand: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec![subcommand];
    all.extend_from_slice(args);
    sinkrate_out(&all)
}

/// `sinkrate ARGS`: its exit code, standard output and standard error.
pub fn sinkrate_out(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(sinkrate_path())
        .args(args)
        .output()
        .expect("sinkrate runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn sinkrate_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("sinkrate")
}

pub fn fio_path() -> PathBuf {
    PathBuf::from("fio")
}

/// A plain command for one side of a side-by-side run: `fio`, or `sinkrate bench
/// --eta=never`; the job's arguments follow.
pub fn bench_command(fio: bool) -> Command {
    if fio {
        Command::new(fio_path())
    } else {
        let mut c = Command::new(sinkrate_path());
        c.args(["bench", "--eta=never"]);
        c
    }
}

/// An emulated slow device (`sinkrate emulate`), mounted on a temporary directory and torn
/// down on drop, also when the test panics.
pub struct SlowDev {
    pub mountpoint: PathBuf,
    _parent: tempfile::TempDir,
}

impl SlowDev {
    /// `args` are `sinkrate emulate up` options, e.g. `["--model", "sd-class10", "--size", "256M"]`.
    pub fn new(args: &[&str]) -> SlowDev {
        let parent = tempfile::tempdir().expect("tempdir");
        let mountpoint = parent.path().join("dev");
        let out = Command::new(sinkrate_path())
            .args(["emulate", "up"])
            .arg(&mountpoint)
            .args(args)
            .output()
            .expect("sinkrate emulate up runs");
        assert!(
            out.status.success(),
            "emulate up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        SlowDev {
            mountpoint,
            _parent: parent,
        }
    }

    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// The device as `sinkrate emulate list --output-format=json` lists it.
    pub fn listed(&self) -> serde_json::Value {
        let out = Command::new(sinkrate_path())
            .args(["emulate", "list", "--output-format=json"])
            .output()
            .expect("emulate list");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v.as_array()
            .and_then(|a| {
                a.iter()
                    .find(|d| {
                        d["state"]["spec"]["mountpoint"]
                            == self.mountpoint.to_string_lossy().as_ref()
                    })
                    .cloned()
            })
            .expect("the device is listed")
    }

    /// The loop device's name as /proc/diskstats knows it (e.g. `loop3`).
    pub fn device_name(&self) -> String {
        let listed = self.listed();
        let mine = listed["state"]["loop_device"]
            .as_str()
            .expect("the device is listed with its loop device");
        mine.rsplit('/').next().unwrap_or_default().to_string()
    }
}

impl Drop for SlowDev {
    fn drop(&mut self) {
        let _ = Command::new(sinkrate_path())
            .args(["emulate", "down"])
            .arg(&self.mountpoint)
            .output();
    }
}

/// A copy of the sinkrate binary that another user can run. The clone may sit in a private
/// directory (mode 0700, such as /root or a fresh `mktemp -d`), whose target/ that user
/// cannot reach; the copy lives in a world-readable temporary directory.
pub struct BinaryForOtherUsers {
    dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl BinaryForOtherUsers {
    pub fn new() -> BinaryForOtherUsers {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir for the binary");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod the binary's directory");
        let path = dir.path().join("sinkrate");
        std::fs::copy(sinkrate_path(), &path).expect("copy the binary");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("chmod the binary");
        BinaryForOtherUsers { dir, path }
    }

    /// A directory the other user can use as its working directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Runs the copy as `nobody` with `args`, in [`Self::dir`].
    pub fn run_as_nobody<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> std::process::Output {
        Command::new("runuser")
            .current_dir(self.dir())
            .args(["-u", "nobody", "--"])
            .arg(&self.path)
            .args(args)
            .output()
            .expect("runuser runs")
    }
}

/// Whether fio is here to compare with; a test without it says so and is skipped.
pub fn fio_or_skip(test: &str) -> bool {
    if have("fio") {
        true
    } else {
        skip(
            test,
            "fio is not installed (scripts/install-deps.sh --test installs it)",
        );
        false
    }
}

/// The offset of every I/O of job `job`, in order, from a `log_offset=1` latency log
/// (`PREFIX_lat.JOB.log`, fio's and sinkrate's alike).
pub fn logged_offsets(dir: &Path, prefix: &str, job: u32) -> Vec<u64> {
    logged_column(dir, prefix, job, 4)
}

/// The time (ms) of every I/O of job `job`, in order, from a latency log.
pub fn logged_times(dir: &Path, prefix: &str, job: u32) -> Vec<u64> {
    logged_column(dir, prefix, job, 0)
}

fn logged_column(dir: &Path, prefix: &str, job: u32, column: usize) -> Vec<u64> {
    std::fs::read_to_string(dir.join(format!("{prefix}_lat.{job}.log")))
        .expect("the latency log")
        .lines()
        .map(|l| {
            l.split(',')
                .nth(column)
                .and_then(|c| c.trim().parse().ok())
                .unwrap_or_else(|| panic!("column {column} of '{l}'"))
        })
        .collect()
}

/// A run that must have succeeded: its standard error is the failure's message.
pub fn succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A refusal's output: exit 2 and exactly one `sinkrate: error:` line, which is returned.
pub fn one_error_line(out: &std::process::Output, args: &dyn std::fmt::Debug) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("sinkrate: error:"))
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "{args:?}: expected one error line, got: {stderr}"
    );
    errors[0].to_string()
}

/// `sinkrate bench ARGS` in `dir` is refused: exit 2, one error line holding every `expect`,
/// no panic, and nothing written in `dir`.
pub fn refuses(dir: &Path, args: &[&str], expect: &[&str]) {
    let before = files_in(dir);
    let out = sinkrate()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs");
    let error = one_error_line(&out, &args);
    for e in expect {
        assert!(error.contains(e), "{args:?}: '{error}' lacks '{e}'");
    }
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{args:?}"
    );
    assert_eq!(files_in(dir), before, "{args:?} wrote files");
}

/// Runs `cmd` to its end and returns its exit code and the kernel's account of it (wait4's
/// rusage: its own peak memory, page faults, CPU time), which no figure of its own shapes.
pub fn run_with_usage(cmd: &mut std::process::Command) -> (Option<i32>, libc::rusage) {
    use std::os::unix::process::ExitStatusExt;
    // Reaped by wait4 below.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("runs");
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for this child alone.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child's pid; `status` and `usage` are valid for writes.
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(r, child.id() as i32, "wait4");
    (std::process::ExitStatus::from_raw(status).code(), usage)
}

/// The JSON documents one after another in `text` (a `--status-interval` run's reports).
pub fn json_documents(text: &[u8]) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_slice(text)
        .into_iter::<serde_json::Value>()
        .map(|d| d.expect("a JSON document"))
        .collect()
}

/// `f` on every item, `workers` at a time (each worker takes the next item left), the
/// results in the items' order: for checks that compare counts or contents, or times in
/// tenths of a second of jobs that sleep nearly all the time; never percent-tight pacing.
pub fn each_at_once<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let running: Vec<_> = (0..workers.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return mine;
                        };
                        mine.push((i, f(item)));
                    }
                })
            })
            .collect();
        running
            .into_iter()
            .flat_map(|w| w.join().expect("a worker's checks"))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Unmounts its path when dropped (lazily, so a failed test still cleans up).
pub struct Unmount(pub PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A /proc/sys setting changed for one test and put back when dropped.
pub struct Sysctl {
    path: PathBuf,
    before: String,
}

impl Sysctl {
    /// As [`Sysctl::set`], None when the kernel refuses the value (nothing changed then).
    pub fn try_set(path: &str, value: &str) -> Option<Sysctl> {
        let before = std::fs::read_to_string(path).expect("read the setting");
        std::fs::write(path, value).ok()?;
        Some(Sysctl {
            path: PathBuf::from(path),
            before,
        })
    }

    pub fn set(path: &str, value: &str) -> Sysctl {
        let before = std::fs::read_to_string(path).expect("read the setting");
        std::fs::write(path, value).expect("write the setting");
        Sysctl {
            path: PathBuf::from(path),
            before,
        }
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, self.before.trim());
    }
}

/// A `sinkrate record` command line for a test, as flags and values: by default one 30 fps
/// stream of 64 KiB frames for 5 s onto `dir`, written direct, no live view, JSON on stdout.
/// A test sets what it is about ([`RecordArgs::with`]) and reads the rest as the default.
pub struct RecordArgs(Vec<(&'static str, String)>);

impl RecordArgs {
    pub fn on(dir: &str) -> RecordArgs {
        RecordArgs(
            [
                ("--dir", dir),
                ("--streams", "1"),
                ("--fps", "30"),
                ("--frame-size", "64k"),
                ("--duration", "5s"),
                ("--write-mode", "direct"),
                ("--live", "never"),
                ("--output-format", "json"),
            ]
            .map(|(flag, value)| (flag, value.to_string()))
            .to_vec(),
        )
    }

    /// `flag` set to `value`, in place of its default or after the others.
    pub fn with(mut self, flag: &'static str, value: &str) -> RecordArgs {
        match self.0.iter_mut().find(|(f, _)| *f == flag) {
            Some(pair) => pair.1 = value.to_string(),
            None => self.0.push((flag, value.to_string())),
        }
        self
    }

    /// The whole command line, `record` first.
    pub fn args(&self) -> Vec<&str> {
        std::iter::once("record")
            .chain(
                self.0
                    .iter()
                    .flat_map(|(flag, value)| [*flag, value.as_str()]),
            )
            .collect()
    }
}

/// How long a run of fio (the peer) may take in a test before it counts as hung: the
/// longest fio job here is seconds; fio 3.33 itself hangs at times (offload mode).
pub const FIO_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `cmd` with its output captured, within `limit`. Returns its output and whether it
/// had to be killed. fio forks each job into a session of its own (setsid): killing only the
/// process started (as timeout(1) does) leaves a hung job holding the output pipe open and
/// the test waiting forever. So the whole tree, every descendant found under /proc, is
/// killed.
pub fn output_within(
    cmd: &mut Command,
    limit: std::time::Duration,
) -> (std::process::Output, bool) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = std::time::Instant::now();
    let mut hung = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if started.elapsed() > limit {
            hung = true;
            for pid in process_tree(child.id()) {
                // SAFETY: kill(2) on a process id found under /proc; no memory is involved.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
            break child.wait().expect("waits");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let output = std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    (output, hung)
}

/// `pid` and all its descendants, from /proc's children lists.
fn process_tree(pid: u32) -> Vec<u32> {
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", tree[i]));
        for task in tasks.into_iter().flatten().flatten() {
            let children = std::fs::read_to_string(task.path().join("children"));
            tree.extend(
                children
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
        i += 1;
    }
    tree
}

/// A run of the fio beside, held to [`FIO_LIMIT`]: `.output()` that cannot hang a test.
pub trait FioOutput {
    fn fio_output(&mut self) -> std::process::Output;
}

impl FioOutput for Command {
    fn fio_output(&mut self) -> std::process::Output {
        // fio 3.33 hangs now and then on its own (seen with an 8 MiB verify job beside other
        // tests): the peer's fault, not the comparison's. A hung run is run once more; a
        // second hang fails the test.
        for attempt in 1..=2 {
            let (output, hung) = output_within(self, FIO_LIMIT);
            if !hung {
                return output;
            }
            eprintln!(
                "note: fio hung and was killed with its jobs after {} s (attempt {attempt}): {:?}",
                FIO_LIMIT.as_secs(),
                self
            );
        }
        panic!(
            "fio hung twice, each time killed after {} s: {:?}",
            FIO_LIMIT.as_secs(),
            self
        );
    }
}

/// fio's bin of a latency (64 per power of two above 127 ns, 1,856 in all), written out
/// here so that sinkrate's own binning is not what checks it.
pub fn fio_bin(ns: u64) -> u64 {
    let msb = 63 - ns.max(1).leading_zeros();
    if msb <= 6 {
        return ns;
    }
    let shift = msb - 6;
    (((u64::from(shift) + 1) << 6) + ((ns >> shift) & 63)).min(1855)
}

/// `sinkrate ARGS` in a directory of its own (check leaves its report where it runs): exit
/// code, the JSON on stdout, stderr.
pub fn run_json(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let cwd = tempfile::tempdir().expect("tempdir");
    let out = Command::new(sinkrate_path())
        .current_dir(cwd.path())
        .args(args)
        .output()
        .expect("sinkrate runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("valid JSON on stdout ({e}); stderr: {stderr}"));
    (out.status.code(), json, stderr)
}

/// The emulated card's own account of itself (its device model's stats file).
pub fn card_account(card: &SlowDev) -> serde_json::Value {
    let listed = card.listed();
    let stats = listed["state"]["device_stats"]
        .as_str()
        .unwrap_or_else(|| panic!("the card lists its stats file: {listed}"));
    serde_json::from_slice(&std::fs::read(stats).expect("stats")).expect("stats JSON")
}

/// The bytes the emulated card has taken in so far, by its own count.
pub fn card_took(card: &SlowDev) -> u64 {
    card_account(card)["wear_written_bytes"]
        .as_u64()
        .expect("the card counts the bytes written to it")
}

/// The lines of stderr that say an error (notes and warnings aside).
pub fn error_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("sinkrate: error:"))
        .collect()
}

/// A capture's trace made by hand: `dir/name` names the iolog, and its sidecar holds the
/// header (format `version`), then `calls` as JSON lines.
pub fn hand_sidecar(dir: &Path, name: &str, version: u32, calls: &[&str]) -> PathBuf {
    let iolog = dir.join(name);
    let mut text = format!(
        "{{\"sinkrate_trace\":{version},\"command\":[\"rec\"],\"started_at\":\"2026-01-01T00:00:00Z\",\"arch\":\"x86_64\",\"kernel\":null,\"tool_version\":\"0.2.0\"}}\n"
    );
    for c in calls {
        text.push_str(c);
        text.push('\n');
    }
    std::fs::write(format!("{}.calls.jsonl", iolog.display()), text).expect("sidecar");
    iolog
}

/// One traced write as a sidecar line: thread 5 writes `len` bytes at `offset` of `file`
/// at `t_ms`.
pub fn traced_write(t_ms: u64, file: &str, offset: u64, len: u64) -> String {
    format!(
        r#"{{"t_ns":{},"dur_ns":1000,"tid":5,"op":"write","file":"{file}","fd":3,"offset":{offset},"len":{len},"call":"write"}}"#,
        t_ms * 1_000_000
    )
}

/// The names of the trace instances the kernel holds, seen through a tracefs mount of the
/// test's own in a mount namespace of its own (tracefs has one superblock): whatever the
/// runs mounted or unmounted (with no tracefs mounted, each run mounts a private one and
/// unmounts it at its end), and invisible to every other run. Root only.
pub fn trace_instances() -> Vec<String> {
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(
            "set -e; d=$(mktemp -d); mount -t tracefs nodev \"$d\"; \
             ls -1 \"$d/instances\"; umount \"$d\"; rmdir \"$d\"",
        )
        .output()
        .expect("unshare runs");
    assert!(
        out.status.success(),
        "a view of tracefs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}
