//! `cargo fuzz run image`: convflow::fuzzing::image must never panic, and its errors are one line.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = convflow::fuzzing::image(data) {
        assert!(!e.trim().is_empty() && !e.contains('\n'), "bad error message: {e:?}");
    }
});
