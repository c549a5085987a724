//! CUDA checks that need no GPU: every kernel source compiles through NVRTC for sm_80 and
//! sm_90 without errors or warnings (CI installs NVRTC from the nvidia-cuda-nvrtc wheel).
//! Skips when NVRTC cannot be loaded, unless CONVFLOW_REQUIRE_NVRTC=1 (CI) or
//! CONVFLOW_REQUIRE_GPU=1 (the GPU host) makes that a failure.
#![cfg(feature = "cuda")]

use convflow::backend::cuda::{self, registry};

fn required() -> bool {
    ["CONVFLOW_REQUIRE_NVRTC", "CONVFLOW_REQUIRE_GPU"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|v| v == "1"))
}

#[test]
fn every_kernel_compiles_with_nvrtc_for_sm80_and_sm90_without_warnings() {
    if !cuda::nvrtc_present() {
        assert!(
            !required(),
            "NVRTC is required (CONVFLOW_REQUIRE_NVRTC/GPU=1) but libnvrtc could not be loaded"
        );
        eprintln!(
            "skipped: libnvrtc not found (set LD_LIBRARY_PATH to the nvidia-cuda-nvrtc \
            wheel's lib/)"
        );
        return;
    }
    let keys = registry::all_check_keys();
    let mut failures = Vec::new();
    for arch in [80, 90] {
        for key in &keys {
            match registry::compile(key, arch) {
                Ok((ptx, log)) => {
                    if log.to_lowercase().contains("warning") {
                        failures.push(format!("sm_{arch} {key:?}: warning:\n{log}"));
                    }
                    assert!(
                        ptx.contains(".entry"),
                        "sm_{arch} {key:?}: no kernel entry in the PTX"
                    );
                    // A pair's weights are uploaded by their mangled names in its two
                    // namespaces: both halves' arrays must be there under those names.
                    if let registry::ModuleKey::FastPair(_) = key {
                        for k in 0..2 {
                            let sym = registry::pair_symbol(k, "c_w");
                            assert!(ptx.contains(sym), "sm_{arch} {key:?}: no {sym} in the PTX");
                        }
                    }
                }
                Err(e) => failures.push(format!("sm_{arch} {key:?}: {e}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} compiles failed:\n{}",
        failures.len(),
        2 * keys.len(),
        failures.join("\n")
    );
}
