//! `cargo fuzz run synthetic_spec`: convflow::fuzzing::synthetic_spec must never panic, and its errors are one line.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = convflow::fuzzing::synthetic_spec(data) {
        assert!(!e.trim().is_empty() && !e.contains('\n'), "bad error message: {e:?}");
    }
});
