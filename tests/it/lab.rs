//! The lab's Ansible collection (deploy/ansible) driven by a real ansible-playbook over SSH:
//! three sshd on loopback ports, started by the test with keys of its own (nothing of the
//! machine's SSH setup is touched), each "board" with its own emulated card of a different
//! model. The plays put sinkrate on each board, run it there and bring every result back.

use crate::common;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// sshd instances on loopback ports, each a "board", stopped on drop.
struct Boards {
    dir: tempfile::TempDir,
    sshd: Vec<Child>,
    ports: Vec<u16>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen runs")
        .success();
    assert!(ok, "ssh-keygen");
}

impl Boards {
    fn start(n: usize) -> Boards {
        Boards::start_with(&vec![String::new(); n])
    }

    /// One board per entry, each entry's lines added to its sshd's configuration (a
    /// ForceCommand that makes its sessions those of another user, or of another machine).
    fn start_with(extra: &[String]) -> Boards {
        let dir = tempfile::tempdir().expect("tempdir");
        keygen(&dir.path().join("host_key"));
        keygen(&dir.path().join("client_key"));
        std::fs::copy(
            dir.path().join("client_key.pub"),
            dir.path().join("authorized_keys"),
        )
        .expect("authorized_keys");
        // sshd's privilege separation directory, which its package makes at boot.
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd");
        // The lane's own state directory holds the boards' states too.
        let state = std::env::var("SINKRATE_STATE_DIR").ok();
        let mut sshd = Vec::new();
        let mut ports = Vec::new();
        for (i, extra) in extra.iter().enumerate() {
            let port = free_port();
            let config = dir.path().join(format!("sshd-{i}.conf"));
            let mut text = format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {key}\nPidFile {dir}/sshd-{i}.pid\n\
                 AuthorizedKeysFile {dir}/authorized_keys\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 StrictModes no\nSubsystem sftp /usr/lib/openssh/sftp-server\nLogLevel ERROR\n",
                key = dir.path().join("host_key").display(),
                dir = dir.path().display(),
            );
            // Each board its own state (its journal of settings), inside the lane's.
            if let Some(s) = &state {
                text.push_str(&format!("SetEnv SINKRATE_STATE_DIR={s}/board-{i}\n"));
            }
            text.push_str(extra);
            std::fs::write(&config, text).expect("sshd config");
            let child = Command::new("/usr/sbin/sshd")
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("sshd starts");
            sshd.push(child);
            ports.push(port);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        for &port in &ports {
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "sshd on port {port} never listened"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Boards { dir, sshd, ports }
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("client_key")
    }
}

impl Drop for Boards {
    fn drop(&mut self) {
        for c in &mut self.sshd {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Copies a folder (the collection and its playbooks) into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The lab: its playbooks in a folder of their own (results land beside them), an
/// inventory of the boards with their cards and a place of each board's own for sinkrate.
struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new(boards: &Boards, cards: &[(&str, &Path)]) -> Lab {
        let dir = tempfile::tempdir().expect("tempdir");
        copy_tree(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/ansible"),
            dir.path(),
        );
        // The builds the install role picks from: this host's, as its x86_64 target.
        let builds = dir.path().join("builds/x86_64-unknown-linux-musl");
        std::fs::create_dir_all(&builds).expect("builds");
        std::fs::copy(common::sinkrate_path(), builds.join("sinkrate")).expect("copy binary");
        let mut inventory = String::from("boards:\n  hosts:\n");
        for ((name, card), port) in cards.iter().zip(&boards.ports) {
            inventory.push_str(&format!(
                "    {name}:\n      ansible_port: {port}\n      sinkrate_card: {card}\n      \
                 sinkrate_binary: {bin}\n",
                card = card.display(),
                bin = dir
                    .path()
                    .join(format!("boards/{name}/bin/sinkrate"))
                    .display(),
            ));
            std::fs::create_dir_all(dir.path().join(format!("boards/{name}/bin")))
                .expect("board bin");
        }
        inventory.push_str(&format!(
            "  vars:\n    ansible_host: 127.0.0.1\n    ansible_user: root\n    \
             ansible_ssh_private_key_file: {key}\n    \
             ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null\n    \
             ansible_python_interpreter: /usr/bin/false\n    \
             sinkrate_binaries: {builds}\n",
            key = boards.key().display(),
            builds = dir.path().join("builds").display(),
        ));
        std::fs::write(dir.path().join("inventory.yml"), inventory).expect("inventory");
        Lab { dir }
    }

    /// Runs a playbook of the lab; its exit code and what it printed.
    fn play(&self, playbook: &str, extra: &[&str]) -> (Option<i32>, String) {
        // The controller's sinkrate (compare, report) is the one under test.
        let controller = format!("sinkrate_controller={}", common::sinkrate_path().display());
        let out = Command::new("ansible-playbook")
            .arg(playbook)
            .args(["-e", &controller])
            .args(extra)
            .current_dir(self.dir.path())
            .env("ANSIBLE_CONFIG", self.dir.path().join("ansible.cfg"))
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_FORCE_COLOR", "0")
            .env("ANSIBLE_LOCAL_TEMP", self.dir.path().join(".ansible-tmp"))
            .env("ANSIBLE_HOME", self.dir.path().join(".ansible"))
            .output()
            .expect("ansible-playbook runs");
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    fn results(&self, board: &str) -> Vec<String> {
        common::files_in(&self.dir.path().join("results").join(board))
    }
}

/// The PLAY RECAP line of a host: (ok, changed, unreachable, failed).
fn recap(out: &str, host: &str) -> (u32, u32, u32, u32) {
    let line = out
        .lines()
        .find(|l| l.starts_with(host) && l.contains("ok="))
        .unwrap_or_else(|| panic!("no recap for {host}: {out}"));
    let field = |k: &str| -> u32 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{k} in {line}"))
    };
    (
        field("ok="),
        field("changed="),
        field("unreachable="),
        field("failed="),
    )
}

const TOOLS: &[&str] = &[
    "ansible-playbook",
    "ssh-keygen",
    "ssh",
    "nbdkit",
    "nbdfuse",
    "fusermount3",
    "mkfs.ext4",
];

#[test]
fn three_boards_are_qualified_and_their_results_come_back() {
    common::with_root(
        "three_boards_are_qualified_and_their_results_come_back",
        TOOLS,
        || {
            let boards = Boards::start(3);
            let cards: Vec<common::SlowDev> = ["sd-class10", "usb2-stick", "emmc"]
                .iter()
                .map(|m| common::SlowDev::new(&["--model", m, "--size", "256M"]))
                .collect();
            let named: Vec<(&str, &Path)> = ["cam1", "cam2", "cam3"]
                .into_iter()
                .zip(cards.iter().map(|c| c.path()))
                .collect();
            let lab = Lab::new(&boards, &named);
            // cam2 gets its build from a release tarball, as scripts/cross.sh makes them.
            let tarballs = lab.dir.path().join("tarballs");
            let stage = tarballs.join("sinkrate-0.2.0-x86_64-unknown-linux-musl");
            std::fs::create_dir_all(&stage).expect("stage");
            std::fs::copy(common::sinkrate_path(), stage.join("sinkrate")).expect("copy");
            let packed = Command::new("tar")
                .arg("-C")
                .arg(&tarballs)
                .args(["-czf", "sinkrate-0.2.0-x86_64-unknown-linux-musl.tar.gz"])
                .arg("sinkrate-0.2.0-x86_64-unknown-linux-musl")
                .current_dir(&tarballs)
                .status()
                .expect("tar runs");
            assert!(packed.success());
            std::fs::remove_dir_all(&stage).expect("unstage");
            let inventory = lab.dir.path().join("inventory.yml");
            let text = std::fs::read_to_string(&inventory).expect("inventory");
            let text = text.replace(
                "    cam2:\n",
                &format!(
                    "    cam2:\n      sinkrate_binaries: {}\n",
                    tarballs.display()
                ),
            );
            std::fs::write(&inventory, text).expect("inventory");
            // What a play killed on the controller three days ago left on the boards, and
            // what one under way now has: the first is swept, the second left alone.
            let stale = tempfile::Builder::new()
                .prefix("sinkrate-lab.")
                .tempdir_in("/tmp")
                .expect("stale");
            let current = tempfile::Builder::new()
                .prefix("sinkrate-lab.")
                .tempdir_in("/tmp")
                .expect("current");
            let aged = Command::new("touch")
                .args(["-d", "3 days ago"])
                .arg(stale.path())
                .status()
                .expect("touch");
            assert!(aged.success());
            let (code, out) = lab.play("qualify.yml", &["-e", "sinkrate_verify_size=16M"]);
            assert_eq!(code, Some(0), "{out}");
            assert!(!stale.path().exists(), "a stale run directory was left");
            assert!(
                current.path().exists(),
                "a current run's directory was removed"
            );
            // Its folder held only the tarball: the binary it runs came out of it.
            let installed = std::fs::read(lab.dir.path().join("boards/cam2/bin/sinkrate"))
                .expect("cam2's sinkrate");
            assert!(
                installed == std::fs::read(common::sinkrate_path()).expect("binary"),
                "cam2's binary is not the one packed"
            );
            for (board, card) in &named {
                let (ok, _, unreachable, failed) = recap(&out, board);
                assert_eq!((unreachable, failed), (0, 0), "{board}: {out}");
                assert!(ok >= 4, "{board}: {out}");
                let files = lab.results(board);
                for kind in ["audit-", "check-", "verify-"] {
                    assert!(
                        files.iter().any(|f| f.starts_with(kind)),
                        "{board}: no {kind} result in {files:?}"
                    );
                }
                // Each check tested the board's own card.
                let check = files
                    .iter()
                    .find(|f| f.starts_with("check-"))
                    .expect("check");
                let v: serde_json::Value = serde_json::from_slice(
                    &std::fs::read(lab.dir.path().join("results").join(board).join(check))
                        .expect("read"),
                )
                .expect("json");
                assert_eq!(
                    v["audit"]["target"]["mount_point"].as_str(),
                    Some(card.to_str().expect("utf8")),
                    "{board}"
                );
                // The card holds what it held before the play (its filesystem's lost+found).
                assert_eq!(common::files_in(card), ["lost+found"], "{board}");
            }
            // The last play's table, a row per board, and its page of them all.
            let page =
                std::fs::read_to_string(lab.dir.path().join("results.html")).expect("results.html");
            for board in ["cam1", "cam2", "cam3"] {
                assert!(out.contains(&format!("| {board}")), "{out}");
                assert!(
                    page.contains(&format!("{board}: check-")),
                    "{board} in the page"
                );
            }
        },
    );
}

/// The mount options of the filesystem mounted at `at` (/proc/self/mountinfo's fields 6
/// and the super options after the separator).
fn mount_options(at: &Path) -> String {
    let info = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let at = at.to_str().expect("utf8");
    info.lines()
        .rev()
        .find(|l| l.split_whitespace().nth(4) == Some(at))
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let sep = fields
                .iter()
                .position(|f| *f == "-")
                .unwrap_or(fields.len());
            format!("{} {}", fields[5], fields.get(sep + 3).unwrap_or(&""))
        })
        .unwrap_or_else(|| panic!("{at} is not mounted"))
}

fn sysctl(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/{name}"))
        .expect("sysctl")
        .trim()
        .to_string()
}

fn read_ahead_kb(card: &common::SlowDev) -> String {
    let path = format!("/sys/block/{}/queue/read_ahead_kb", card.device_name());
    std::fs::read_to_string(&path)
        .expect("read_ahead_kb")
        .trim()
        .to_string()
}

#[test]
fn the_tune_play_changes_once_checks_without_changing_and_restores() {
    common::with_root(
        "the_tune_play_changes_once_checks_without_changing_and_restores",
        TOOLS,
        || {
            let boards = Boards::start(3);
            let cards: Vec<common::SlowDev> = ["sd-class10", "usb2-stick", "emmc"]
                .iter()
                .map(|m| common::SlowDev::new(&["--model", m, "--size", "64M"]))
                .collect();
            let names = ["cam1", "cam2", "cam3"];
            let named: Vec<(&str, &Path)> = names
                .into_iter()
                .zip(cards.iter().map(|c| c.path()))
                .collect();
            let lab = Lab::new(&boards, &named);
            // What the play may change, read from the kernel: each card's queue setting
            // and mount options, and a writeback sysctl of the machine.
            let state = || -> Vec<String> {
                let mut v: Vec<String> = cards.iter().map(read_ahead_kb).collect();
                v.extend(cards.iter().map(|c| mount_options(c.path())));
                v.push(sysctl("vm/dirty_expire_centisecs"));
                v
            };
            let before = state();
            // Values none of them has, so that the play has something to change.
            let want = ["520", "528", "536"]
                .into_iter()
                .find(|w| !before[..3].iter().any(|v| v == w))
                .expect("a read-ahead none of three cards has");
            let expire = if sysctl("vm/dirty_expire_centisecs") == "2900" {
                "2800"
            } else {
                "2900"
            };
            let settings = format!(
                "{{\"sinkrate_settings\": [\"queue:read_ahead_kb={want}\", \"mount:noatime\", \
                 \"vm.dirty_expire_centisecs={expire}\"]}}"
            );
            let set = ["-e", settings.as_str()];

            let (code, out) = lab.play("install.yml", &[]);
            assert_eq!(code, Some(0), "{out}");
            // --check --diff: the change is shown, and nothing changes.
            let (code, out) = lab.play("tune.yml", &[&set[..], &["--check", "--diff"]].concat());
            assert_eq!(code, Some(0), "{out}");
            assert!(
                out.contains(&format!("+queue:read_ahead_kb = {want}")),
                "{out}"
            );
            assert!(
                out.contains("+mount:noatime") || out.contains("noatime"),
                "{out}"
            );
            assert_eq!(state(), before, "check mode changed a setting: {out}");

            let (code, out) = lab.play("tune.yml", &set);
            assert_eq!(code, Some(0), "{out}");
            for name in names {
                assert_eq!(recap(&out, name).1, 1, "{name}: {out}");
            }
            assert!(cards.iter().all(|c| read_ahead_kb(c) == want));
            assert!(cards
                .iter()
                .all(|c| mount_options(c.path()).contains("noatime")));
            assert_eq!(sysctl("vm/dirty_expire_centisecs"), expire);

            // Again: nothing left to change.
            let (code, out) = lab.play("tune.yml", &set);
            assert_eq!(code, Some(0), "{out}");
            for name in names {
                assert_eq!(recap(&out, name).1, 0, "{name}: {out}");
            }

            // The three boards are one machine here, with one journal of settings
            // (/var/lib/sinkrate): the first board's restore puts back all three cards'
            // values, and the others find nothing left to restore.
            let (code, out) = lab.play("restore.yml", &[]);
            assert_eq!(code, Some(0), "{out}");
            let changed: u32 = names.iter().map(|name| recap(&out, name).1).sum();
            assert!(changed >= 1, "{out}");
            assert_eq!(state(), before);
        },
    );
}

#[test]
fn a_board_that_cannot_run_is_named_and_the_others_go_on() {
    common::with_root(
        "a_board_that_cannot_run_is_named_and_the_others_go_on",
        TOOLS,
        || {
            // The fourth sshd's sessions are those of an ordinary user (nobody): a board the
            // lab reaches but not as root.
            let boards = Boards::start_with(&[
                String::new(),
                String::new(),
                String::new(),
                "ForceCommand /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups \
                 /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n"
                    .into(),
            ]);
            let card = common::SlowDev::new(&["--model", "emmc", "--size", "64M"]);
            // cam2's card is a directory that does not exist.
            let missing = Path::new("/nonexistent/card");
            // cam5's card is full.
            let full = common::SlowDev::new(&["--model", "emmc", "--size", "64M"]);
            let filled = Command::new("dd")
                .arg("if=/dev/zero")
                .arg(format!("of={}", full.path().join("fill").display()))
                .args(["bs=1M", "status=none"])
                .status()
                .expect("dd runs");
            assert!(!filled.success(), "dd ends when the card is full");
            let lab = Lab::new(
                &boards,
                &[
                    ("cam1", card.path()),
                    ("cam2", missing),
                    ("cam5", full.path()),
                ],
            );
            // A third board no one answers at.
            let inventory = lab.dir.path().join("inventory.yml");
            let text = std::fs::read_to_string(&inventory).expect("inventory");
            let text = text.replace(
                "  vars:\n",
                &format!(
                    "    cam3:\n      ansible_port: {}\n      sinkrate_card: /tmp\n  vars:\n",
                    free_port()
                ),
            );
            // A fourth board whose architecture has no build here.
            let no_builds = lab.dir.path().join("no-builds");
            std::fs::create_dir(&no_builds).expect("dir");
            let text = text.replace(
                "  vars:\n",
                &format!(
                    "    cam4:\n      ansible_port: {}\n      sinkrate_card: {}\n      \
                     sinkrate_binaries: {}\n  vars:\n",
                    boards.ports[0],
                    card.path().display(),
                    no_builds.display()
                ),
            );
            // A fifth whose user is not root.
            let text = text.replace(
                "  vars:\n",
                &format!(
                    "    cam6:\n      ansible_port: {}\n      sinkrate_card: {}\n  vars:\n",
                    boards.ports[3],
                    card.path().display(),
                ),
            );
            std::fs::write(&inventory, text).expect("inventory");
            let (code, out) = lab.play("qualify.yml", &["-e", "sinkrate_verify_size=16M"]);
            assert_ne!(code, Some(0), "{out}");
            let (_, _, _, failed) = recap(&out, "cam6");
            assert_eq!(failed, 1, "{out}");
            assert!(
                out.contains("the board's user is not root (uid 65534)"),
                "cam6's reason: {out}"
            );
            // Every board that failed is a FAILED row of the table and a FAILED section of
            // the page, with its reason, read back from what it left in results/BOARD/.
            let page =
                std::fs::read_to_string(lab.dir.path().join("results.html")).expect("results.html");
            for (board, reason) in [
                ("cam2", "/nonexistent/card"),
                ("cam3", "unreachable"),
                ("cam4", "no sinkrate built"),
                ("cam5", "free some space"),
                ("cam6", "not root"),
            ] {
                let row = out
                    .lines()
                    .find(|l| l.contains(&format!("| {board} | FAILED")))
                    .unwrap_or_else(|| panic!("no FAILED row for {board}: {out}"));
                assert!(row.contains(reason), "{board}'s row: {row}");
                assert!(
                    !lab.results(board).is_empty(),
                    "{board} left nothing in results/"
                );
                assert!(
                    page.contains(&format!("{board}: ")) && page.contains(reason),
                    "{board} and its reason in the page"
                );
            }
            let (_, _, unreachable, _) = recap(&out, "cam3");
            assert_eq!(unreachable, 1, "{out}");
            let (_, _, _, failed) = recap(&out, "cam2");
            assert_eq!(failed, 1, "{out}");
            assert!(out.contains("/nonexistent/card"), "cam2's reason: {out}");
            let (_, _, _, failed) = recap(&out, "cam4");
            assert_eq!(failed, 1, "{out}");
            assert!(
                out.contains("no sinkrate built for this board's architecture (x86_64)"),
                "cam4's reason: {out}"
            );
            let (_, _, _, failed) = recap(&out, "cam5");
            assert_eq!(failed, 1, "{out}");
            assert!(out.contains("free some space"), "cam5's reason: {out}");
            let (ok, _, unreachable, failed) = recap(&out, "cam1");
            assert_eq!((unreachable, failed), (0, 0), "{out}");
            assert!(ok >= 4, "{out}");
            assert!(lab.results("cam1").iter().any(|f| f.starts_with("check-")));
        },
    );
}

/// The rule that tells binfmt_misc to hand aarch64 ELF executables to qemu-user (the magic
/// and mask of qemu's own qemu-binfmt-conf.sh; F: qemu is opened at registration).
const QEMU_AARCH64_BINFMT: &str = ":qemu-aarch64:M::\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00:\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff:/usr/bin/qemu-aarch64:F";

/// An aarch64 board gets the aarch64 build and runs it. The board is an sshd whose sessions
/// run in a user namespace with a binfmt_misc instance of its own (Linux 6.7 and later), in
/// which aarch64 executables run under qemu-user: nothing of the machine's own binfmt_misc
/// is touched. Its `uname -m` says aarch64 through a two-line stand-in on the session's PATH,
/// the one thing of an ARM board a shell running on x86_64 cannot give; the choice of build,
/// its transfer, its `--version` and the runs are the role's own.
#[test]
fn an_aarch64_board_runs_the_aarch64_build_the_role_chose() {
    const TEST: &str = "an_aarch64_board_runs_the_aarch64_build_the_role_chose";
    let mut tools = TOOLS.to_vec();
    tools.extend(["qemu-aarch64", "unshare"]);
    common::with_root(TEST, &tools, || {
        let Some(bins) = crate::qemu::arm_binaries(TEST) else {
            return;
        };
        let arm = bins
            .iter()
            .find(|b| b.triple.starts_with("aarch64"))
            .expect("an aarch64 binary");
        let session = tempfile::tempdir().expect("tempdir");
        let shim = session.path().join("shim");
        std::fs::create_dir(&shim).expect("shim");
        std::fs::write(
            shim.join("uname"),
            "#!/bin/sh\ncase \"$1\" in -m) echo aarch64 ;; *) exec /usr/bin/uname \"$@\" ;; esac\n",
        )
        .expect("uname");
        // As the kernel reads it: its \x escapes are binfmt_misc's, not a shell's.
        let rule = session.path().join("binfmt");
        std::fs::write(&rule, QEMU_AARCH64_BINFMT).expect("binfmt");
        let board = session.path().join("board.sh");
        std::fs::write(
            &board,
            format!(
                "#!/bin/sh\nexec unshare --user --map-root-user --mount /bin/sh -c '\n\
                 mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || exit 126\n\
                 cat {rule} > /proc/sys/fs/binfmt_misc/register || exit 126\n\
                 PATH={shim}:$PATH\n\
                 exec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"'\n",
                shim = shim.display(),
                rule = rule.display(),
            ),
        )
        .expect("board.sh");
        for f in [&board, &shim.join("uname")] {
            let ok = Command::new("chmod")
                .arg("755")
                .arg(f)
                .status()
                .expect("chmod")
                .success();
            assert!(ok);
        }
        // This kernel must give a user namespace its own binfmt_misc (Linux 6.7+).
        let probe = Command::new(&board)
            .env(
                "SSH_ORIGINAL_COMMAND",
                arm.path.display().to_string() + " --version",
            )
            .output()
            .expect("board.sh runs");
        if !probe.status.success() {
            common::skip(
                TEST,
                &format!(
                    "no binfmt_misc of its own in a user namespace here (Linux 6.7+): {}",
                    String::from_utf8_lossy(&probe.stderr).trim()
                ),
            );
            return;
        }
        let boards = Boards::start_with(&[format!("ForceCommand {}\n", board.display())]);
        let card = common::SlowDev::new(&["--model", "emmc", "--size", "64M"]);
        let lab = Lab::new(&boards, &[("arm1", card.path())]);
        // Beside the host's own build, the aarch64 one the role must choose.
        let builds = lab.dir.path().join("builds/aarch64-unknown-linux-musl");
        std::fs::create_dir_all(&builds).expect("builds");
        std::fs::copy(&arm.path, builds.join("sinkrate")).expect("copy");
        let (code, out) = lab.play("qualify.yml", &["-e", "sinkrate_verify_size=4M"]);
        assert_eq!(code, Some(0), "{out}");
        let installed = std::fs::read(lab.dir.path().join("boards/arm1/bin/sinkrate"))
            .expect("arm1's sinkrate");
        assert!(
            installed == std::fs::read(&arm.path).expect("binary"),
            "arm1's binary is not the aarch64 build"
        );
        // What ran on the board says it was the aarch64 build, on the board's card.
        let files = lab.results("arm1");
        let check = files
            .iter()
            .find(|f| f.starts_with("check-"))
            .unwrap_or_else(|| panic!("no check result in {files:?}: {out}"));
        let v: serde_json::Value = serde_json::from_slice(
            &std::fs::read(lab.dir.path().join("results/arm1").join(check)).expect("read"),
        )
        .expect("json");
        assert_eq!(v["host"]["arch"].as_str(), Some("aarch64"), "{v}");
        assert_eq!(
            v["audit"]["target"]["mount_point"].as_str(),
            Some(card.path().to_str().expect("utf8"))
        );
        assert_eq!(common::files_in(card.path()), ["lost+found"]);
    });
}

#[test]
fn check_mode_changes_nothing_and_an_inventory_value_is_never_a_flag() {
    common::with_root(
        "check_mode_changes_nothing_and_an_inventory_value_is_never_a_flag",
        TOOLS,
        || {
            let boards = Boards::start(1);
            let card = tempfile::tempdir().expect("card");
            let lab = Lab::new(&boards, &[("cam1", card.path())]);
            let installed = lab.dir.path().join("boards/cam1/bin/sinkrate");
            for playbook in ["qualify.yml", "soak.yml", "install.yml"] {
                let (code, out) = lab.play(playbook, &["--check"]);
                assert_eq!(code, Some(0), "{playbook} --check: {out}");
                assert!(
                    lab.results("cam1").is_empty(),
                    "{playbook} --check wrote results: {:?}\n{out}",
                    lab.results("cam1")
                );
                assert!(
                    !installed.exists(),
                    "{playbook} --check installed the binary"
                );
            }
            let (_, out) = lab.play("qualify.yml", &["--check"]);
            assert!(
                out.contains("would run sinkrate audit, check and verify"),
                "{out}"
            );
            assert!(!lab.dir.path().join("results.html").exists());
            assert!(common::files_in(card.path()).is_empty());
            // A card whose name starts with '-': refused before anything runs.
            let inventory = lab.dir.path().join("inventory.yml");
            let text = std::fs::read_to_string(&inventory).expect("inventory");
            let card_line = format!("sinkrate_card: {}", card.path().display());
            std::fs::write(
                &inventory,
                text.replace(&card_line, "sinkrate_card: --force"),
            )
            .expect("inventory");
            let (code, out) = lab.play("qualify.yml", &[]);
            assert_ne!(code, Some(0), "{out}");
            assert!(out.contains("--force starts with '-'"), "{out}");
            assert!(!installed.exists(), "it ran before refusing: {out}");
            // A settings list item likewise, in the tune play.
            std::fs::write(&inventory, text).expect("inventory");
            let (code, out) = lab.play(
                "tune.yml",
                &["-e", r#"{"sinkrate_settings": ["--dry-run"]}"#],
            );
            assert_ne!(code, Some(0), "{out}");
            assert!(out.contains("--dry-run starts with '-'"), "{out}");
        },
    );
}
