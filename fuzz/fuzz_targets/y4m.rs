//! `cargo fuzz run y4m`: convflow::fuzzing::y4m_stream must never panic, and its errors are one line.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = convflow::fuzzing::y4m_stream(data) {
        assert!(!e.trim().is_empty() && !e.contains('\n'), "bad error message: {e:?}");
    }
});
