//! `cargo fuzz run kernel_file`: convflow::fuzzing::kernel_file must never panic, and its errors are one line.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = convflow::fuzzing::kernel_file(data) {
        assert!(!e.trim().is_empty() && !e.contains('\n'), "bad error message: {e:?}");
    }
});
