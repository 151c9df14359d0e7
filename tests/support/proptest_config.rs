//! Proptest settings of the native test binaries (`tests/core`, `tests/flush`,
//! `tests/store`): failures are kept beside the test's source file
//! (`<file>.proptest-regressions`) and replayed first. Proptest's default would look for
//! the binary's `main.rs` and keep every module's failures in one
//! `tests/proptest-regressions/<file>.txt`, where `core/props.rs` and `flush/props.rs`
//! would share a file and the kept failures would not be replayed.

use proptest::test_runner::{Config, FileFailurePersistence};

/// `cases` cases, failures kept beside the source.
pub fn cases(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}
