//! The batch (`src/nostr/batch.rs`) and the single check (`src/nostr/schnorr.rs`) held
//! to k256's `verify_raw` on arbitrary bytes: the batch is true exactly when every item
//! verifies under k256, and each item's single check answers what k256 answers.
//!
//! The input is read as items of one control byte and 128 bytes. Control 0..64: a
//! valid signature from a pool. 64..128: one of them with one bit flipped (of
//! `id ‖ pubkey ‖ r ‖ s`; which, from the first two bytes). 128..192: one of them whose s
//! gains `δ` (the last 32 bytes, reduced) while the previous item's s loses it, a pair
//! that cancels when the coefficients are all 1. 192..: the 128 bytes as they are,
//! as `id ‖ pubkey ‖ r ‖ s`. At most 64 items.
//!
//! A bounded run (from `fuzz/`, with a nightly toolchain; no sanitizer needed for safe
//! Rust): `cargo +nightly fuzz run -s none batch_vs_k256 -- -max_total_time=60
//! -max_len=8256 -len_control=0`.
#![no_main]

use std::sync::OnceLock;

use k256::elliptic_curve::ops::Reduce;
use k256::elliptic_curve::PrimeField;
use k256::schnorr::{Signature, SigningKey, VerifyingKey};
use k256::{FieldBytes, Scalar, U256};
use libfuzzer_sys::fuzz_target;
use nostr_outbox::nostr::fuzzing::{batch_verifies, single_verifies};
use sha2::{Digest, Sha256};

type Item = ([u8; 32], [u8; 32], [u8; 64]);

/// 4 authors × 8 messages, signed once.
fn pool() -> &'static [Item] {
    static POOL: OnceLock<Vec<Item>> = OnceLock::new();
    POOL.get_or_init(|| {
        (0..32u8)
            .map(|i| {
                let key = SigningKey::from_bytes(&Sha256::digest([b'f', i % 4])[..])
                    .expect("a valid secret key");
                let id: [u8; 32] = Sha256::digest([b'm', i]).into();
                let sig = key.sign_raw(&id, &[i; 32]).expect("signs").to_bytes();
                (id, key.verifying_key().to_bytes().into(), sig)
            })
            .collect()
    })
}

fn k256_accepts((id, x, sig): &Item) -> bool {
    let (Ok(key), Ok(sig)) = (VerifyingKey::from_bytes(x), Signature::try_from(&sig[..])) else {
        return false;
    };
    key.verify_raw(id, &sig).is_ok()
}

fn bytes32(bytes: &[u8]) -> FieldBytes {
    let mut out = [0u8; 32];
    out.copy_from_slice(bytes);
    out.into()
}

fn s_of(item: &Item) -> Option<Scalar> {
    Option::from(Scalar::from_repr(bytes32(&item.2[32..])))
}

fuzz_target!(|data: &[u8]| {
    let mut items: Vec<Item> = Vec::new();
    for chunk in data.chunks_exact(129).take(64) {
        let (control, bytes) = (chunk[0], &chunk[1..]);
        let mut item: Item = pool()[usize::from(control) % pool().len()];
        match control {
            0..64 => {}
            64..128 => {
                let bit = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]) % 1024);
                let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
                match byte {
                    0..32 => item.0[byte] ^= mask,
                    32..64 => item.1[byte - 32] ^= mask,
                    _ => item.2[byte - 64] ^= mask,
                }
            }
            128..192 => {
                let delta = <Scalar as Reduce<U256>>::reduce_bytes(&bytes32(&bytes[96..]));
                if let (Some(last), Some(s)) = (items.len().checked_sub(1), s_of(&item)) {
                    if let Some(t) = s_of(&items[last]) {
                        item.2[32..].copy_from_slice(&(s + delta).to_bytes());
                        items[last].2[32..].copy_from_slice(&(t - delta).to_bytes());
                    }
                }
            }
            _ => {
                item.0.copy_from_slice(&bytes[..32]);
                item.1.copy_from_slice(&bytes[32..64]);
                item.2.copy_from_slice(&bytes[64..]);
            }
        }
        items.push(item);
    }
    let expected: Vec<bool> = items.iter().map(k256_accepts).collect();
    assert_eq!(
        batch_verifies(&items),
        expected.iter().all(|&ok| ok),
        "batch of {items:?}"
    );
    for (item, expected) in items.iter().zip(expected) {
        // Twice: the second check of a key is made with its table.
        for _ in 0..2 {
            assert_eq!(
                single_verifies(&item.0, &item.1, &item.2),
                expected,
                "single {item:?}"
            );
        }
    }
});
