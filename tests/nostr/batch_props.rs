//! `SignatureCheck::first_bad` (BIP-340 batch verification, then single checks) held
//! to k256's reference, `k256::schnorr::VerifyingKey::verify_raw`, through the public
//! API: it answers the first item k256 refuses, or none. Batches of 1 to 64 items by
//! one author or by 2 to 8 (a batch is used from 4), with flipped bits in any field,
//! edge values of r and s, copies, other authors' keys, and pairs whose errors cancel
//! when the coefficients are all 1; one list of 1100 (two batches). Native only.
//!
//! What the batch answers alone (and why it refuses a set a single check would find
//! bad anyway) is tested inside the crate (`src/nostr/batch/props.rs`): here a batch
//! that wrongly refuses is hidden by the single checks that follow it, while one that
//! wrongly accepts shows. For a long run:
//! `PROPTEST_CASES=2000 cargo test --release --test nostr_batch_props`.
#![cfg(not(target_arch = "wasm32"))]

use k256::elliptic_curve::ops::Reduce;
use k256::elliptic_curve::PrimeField;
use k256::schnorr::{Signature, VerifyingKey};
use k256::{FieldBytes, Scalar, U256};
use nostr_outbox::nostr::{Event, SignatureCheck};
use proptest::prelude::*;
use proptest::sample::Index;

use crate::sig_support;
use sig_support::{cases, lower_hex, pool, Item, AUTHORS, MESSAGES};

/// The item as an event's signature check (the rest of the event does not matter).
fn check((id, x, sig): &Item) -> SignatureCheck {
    Event::from_parts(
        lower_hex(id),
        lower_hex(x),
        1_700_000_000,
        1,
        vec![],
        String::new(),
        lower_hex(sig),
    )
    .expect("well-formed hex")
    .signature()
}

fn k256_accepts((id, x, sig): &Item) -> bool {
    let (Ok(key), Ok(sig)) = (VerifyingKey::from_bytes(x), Signature::try_from(&sig[..])) else {
        return false;
    };
    key.verify_raw(id, &sig).is_ok()
}

fn s_of(item: &Item) -> Option<Scalar> {
    let mut s = [0u8; 32];
    s.copy_from_slice(&item.2[32..]);
    Option::from(Scalar::from_repr(FieldBytes::from(s)))
}

fn set_s(item: &mut Item, s: Scalar) {
    item.2[32..].copy_from_slice(&s.to_bytes());
}

/// secp256k1's `p` and `n`, big-endian.
const P: [u8; 32] = {
    let mut p = [0xff; 32];
    p[27] = 0xfe;
    p[30] = 0xfc;
    p[31] = 0x2f;
    p
};
const N: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
    0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
];

#[derive(Debug, Clone)]
enum Change {
    /// Flips bit `.0` of the 128 bytes `id ‖ pubkey ‖ r ‖ s`.
    Flip(u16),
    /// `r := p`, `r := 0`, `s := n`, `s := 0`, `pubkey := p`.
    Edge(u8),
    /// Replaces the item by a copy of another.
    CopyOf(Index),
    /// Puts pool author `.0`'s key on the item.
    KeyOf(usize),
    /// `s := s + δ` here and `s − δ` on another item: the errors cancel when the
    /// coefficients are all 1.
    Cancel(usize, [u8; 32]),
}

fn apply(items: &mut [Item], at: usize, change: &Change) {
    match change {
        Change::Flip(bit) => {
            let (byte, mask) = (usize::from(bit / 8), 1u8 << (bit % 8));
            match byte {
                0..32 => items[at].0[byte] ^= mask,
                32..64 => items[at].1[byte - 32] ^= mask,
                _ => items[at].2[byte - 64] ^= mask,
            }
        }
        Change::Edge(which) => match which % 5 {
            0 => items[at].2[..32].copy_from_slice(&P),
            1 => items[at].2[..32].fill(0),
            2 => items[at].2[32..].copy_from_slice(&N),
            3 => items[at].2[32..].fill(0),
            _ => items[at].1 = P,
        },
        Change::CopyOf(from) => items[at] = items[from.index(items.len())],
        Change::KeyOf(author) => items[at].1 = pool()[*author][0].1,
        Change::Cancel(other, delta) => {
            if items.len() < 2 {
                return;
            }
            let other = (at + 1 + other % (items.len() - 1)) % items.len();
            let delta = <Scalar as Reduce<U256>>::reduce_bytes(&(*delta).into());
            if let (Some(s), Some(t)) = (s_of(&items[at]), s_of(&items[other])) {
                set_s(&mut items[at], s + delta);
                set_s(&mut items[other], t - delta);
            }
        }
    }
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => (0u16..1024).prop_map(Change::Flip),
        2 => any::<u8>().prop_map(Change::Edge),
        1 => any::<Index>().prop_map(Change::CopyOf),
        1 => (0..AUTHORS).prop_map(Change::KeyOf),
        2 => (any::<usize>(), any::<[u8; 32]>()).prop_map(|(i, d)| Change::Cancel(i, d)),
    ]
}

fn batch() -> impl Strategy<Value = (Vec<Item>, Vec<(Index, Change)>)> {
    let items = prop_oneof![Just(1usize), 2..=AUTHORS]
        .prop_flat_map(|authors| proptest::collection::vec((0..authors, 0..MESSAGES), 1..=64))
        .prop_map(|picks| {
            picks
                .into_iter()
                .map(|(a, m)| pool()[a][m])
                .collect::<Vec<Item>>()
        });
    (
        items,
        proptest::collection::vec((any::<Index>(), change()), 0..=3),
    )
}

/// `first_bad` answers the first item k256 refuses, with the error its single check
/// gives; each item's single check answers what k256 answers.
fn agrees_with_k256(items: &[Item]) -> Result<(), TestCaseError> {
    let checks: Vec<SignatureCheck> = items.iter().map(check).collect();
    let first_refused = items.iter().position(|item| !k256_accepts(item));
    let found = SignatureCheck::first_bad(&checks);
    prop_assert_eq!(found.as_ref().map(|(i, _)| *i), first_refused);
    if let Some((i, err)) = found {
        prop_assert_eq!(Err(err), checks[i].verify());
    }
    for (i, (c, item)) in checks.iter().zip(items).enumerate() {
        prop_assert_eq!(c.verify().is_ok(), k256_accepts(item), "item {}", i);
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(32))]

    #[test]
    fn first_bad_answers_the_first_item_k256_refuses((mut items, changes) in batch()) {
        for (at, change) in &changes {
            let at = at.index(items.len());
            apply(&mut items, at, change);
        }
        agrees_with_k256(&items)?;
    }
}

/// 1100 items (a batch of 1024, then one of 76): all valid; then a bad one in the
/// second batch; then a pair in the first whose errors cancel when the coefficients are
/// all 1. (Only the changed items are checked against k256 here: the others are the
/// pool's, which k256 signed.)
#[test]
fn a_list_of_1100_answers_what_k256_answers() {
    let valid: Vec<Item> = (0..1100)
        .map(|i| pool()[(i * 3) % AUTHORS][(i * 7) % MESSAGES])
        .collect();
    let first_bad = |items: &[Item]| {
        let checks: Vec<SignatureCheck> = items.iter().map(check).collect();
        SignatureCheck::first_bad(&checks).map(|(i, err)| {
            assert_eq!(Err(err), checks[i].verify());
            i
        })
    };
    assert_eq!(first_bad(&valid), None);
    let mut bad = valid.clone();
    apply(&mut bad, 1050, &Change::Flip(1000));
    assert!(!k256_accepts(&bad[1050]));
    assert_eq!(first_bad(&bad), Some(1050));
    let mut cancelling = valid.clone();
    // Item 10's s gains δ, item 20's loses it.
    apply(&mut cancelling, 10, &Change::Cancel(9, [9; 32]));
    assert!(!k256_accepts(&cancelling[10]) && !k256_accepts(&cancelling[20]));
    assert_eq!(first_bad(&cancelling), Some(10));
}
