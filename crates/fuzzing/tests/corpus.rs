//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) and the inputs of past findings
//! (`fuzz/regressions/<target>/`) through the same entry points
//! libFuzzer drives, on stable: no input may panic, take longer than a second, or hold more
//! than 256 MiB at once (libFuzzer's runs use the same limits, see `bench/fuzz`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Counts the bytes held, and the most held since the last reset, to catch an input that
/// makes a reader allocate without bound.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The counters are process-wide: the tests take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout contract is passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const TIME_LIMIT: Duration = Duration::from_secs(1);
const MEMORY_LIMIT: usize = 256 << 20;
/// Fewer than this many inputs for a target means the corpus was not committed.
const MIN_INPUTS: usize = 20;
/// More than this many means a fuzzing run's corpus was committed unminimised (each
/// target's minimised corpus holds 129 to 1,442 inputs).
const MAX_INPUTS: usize = 2_000;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// Inputs that once made a reader panic, kept apart from the corpus (which each fuzzing run
/// minimises, and may drop them from once they are fixed).
fn regressions_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target)
}

#[test]
fn every_committed_input_is_answered_quickly_without_panic() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut failures = Vec::new();
    for target in sinkrate_fuzzing::TARGETS {
        let dir = corpus_dir(target.name);
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (the corpus is committed)", dir.display()))
            .map(|e| e.expect("a corpus directory entry").path())
            .collect();
        inputs.sort();
        assert!(
            inputs.len() <= MAX_INPUTS,
            "{}: {} inputs, more than {MAX_INPUTS}: minimise it (cargo +nightly fuzz cmin -s none {} -- -set_cover_merge=1)",
            dir.display(),
            inputs.len(),
            target.name
        );
        if let Ok(found) = std::fs::read_dir(regressions_dir(target.name)) {
            inputs.extend(found.flatten().map(|e| e.path()));
        }
        assert!(
            inputs.len() >= MIN_INPUTS,
            "{}: {} inputs, expected at least {MIN_INPUTS}",
            dir.display(),
            inputs.len()
        );
        for path in &inputs {
            let data = std::fs::read(path).expect("a corpus file");
            let base = HELD.load(Ordering::Relaxed);
            PEAK.store(base, Ordering::Relaxed);
            let start = Instant::now();
            let outcome = std::panic::catch_unwind(|| (target.run)(&data));
            let took = start.elapsed();
            let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
            let name = path.display();
            if outcome.is_err() {
                failures.push(format!("{name}: panicked"));
            } else if took > TIME_LIMIT {
                failures.push(format!("{name}: took {took:?}"));
            } else if peak > MEMORY_LIMIT {
                failures.push(format!("{name}: held {} MiB", peak >> 20));
            }
        }
        eprintln!("{}: {} inputs replayed", target.name, inputs.len());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The limits above can fail: an input that allocates too much is caught.
#[test]
fn the_memory_limit_catches_a_large_allocation() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let base = HELD.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    // Twice the limit: the harness's own threads allocate and free meanwhile.
    let big = std::hint::black_box(vec![1u8; 2 * MEMORY_LIMIT]);
    assert_eq!(big[MEMORY_LIMIT], 1);
    drop(big);
    assert!(PEAK.load(Ordering::Relaxed) - base > MEMORY_LIMIT);
}
