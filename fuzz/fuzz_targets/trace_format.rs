#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sinkrate_fuzzing::trace_format(data));
