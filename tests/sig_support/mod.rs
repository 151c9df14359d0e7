//! Signed items and proptest settings shared by the BIP-340 property tests: the
//! integration tests (`mod sig_support;`) and the crate's own batch properties
//! (`src/nostr/batch/props.rs` includes this file by path). Native only.
#![allow(dead_code)]

use std::sync::OnceLock;

use k256::schnorr::SigningKey;
use proptest::prelude::ProptestConfig;
use sha2::{Digest, Sha256};

/// `(id, pubkey, sig)`, decoded.
pub type Item = ([u8; 32], [u8; 32], [u8; 64]);

/// Authors in the pool of signed items, and items per author.
pub const AUTHORS: usize = 8;
/// Items per author.
pub const MESSAGES: usize = 24;

/// `default` cases, or `PROPTEST_CASES` when set; no persistence files.
pub fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Valid signatures, `pool()[author][message]`: signed once per test binary.
pub fn pool() -> &'static [Vec<Item>] {
    static POOL: OnceLock<Vec<Vec<Item>>> = OnceLock::new();
    POOL.get_or_init(|| {
        (0..AUTHORS as u8)
            .map(|author| {
                let key = SigningKey::from_bytes(&Sha256::digest([b'k', author])[..])
                    .expect("a valid secret key");
                let x: [u8; 32] = key.verifying_key().to_bytes().into();
                (0..MESSAGES as u8)
                    .map(|m| {
                        let id: [u8; 32] = Sha256::digest([b'm', author, m]).into();
                        let aux: [u8; 32] = Sha256::digest([b'a', author, m]).into();
                        let sig = key.sign_raw(&id, &aux).expect("signs").to_bytes();
                        (id, x, sig)
                    })
                    .collect()
            })
            .collect()
    })
}

/// Lowercase hex, as in events.
pub fn lower_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
