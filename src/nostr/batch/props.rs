//! Property tests that hold the hand-written BIP-340 checks to k256's reference,
//! `k256::schnorr::VerifyingKey::verify_raw`. The batch equation (the parent module)
//! must answer true exactly when every item verifies under k256, and must refuse an
//! encoding k256 refuses before it gets to the equation. The single check
//! (`schnorr.rs`) must give k256's answer for every item, once by k256's path and once
//! with the key's table.
//!
//! Inputs: signed batches of 1 to 64 items by one author or by 2 to 8, with up to
//! three adversarial changes: a flipped bit in any field, s ≥ n, s = 0, r ≥ p, r = 0,
//! an x off the curve (as r or as the key), a key ≥ p, one item copied over another,
//! another author's key, s negated, a nonce point of odd y. Then sets built to cancel
//! under coefficients an attacker could predict; every edge value in every field of a
//! small batch; a batch of 300. Native only (proptest).
//!
//! The default run is short (part of `cargo test`). For a long run:
//! `PROPTEST_CASES=2000 cargo test --release --lib nostr::batch::props`.

use std::sync::OnceLock;

use k256::elliptic_curve::ops::Reduce;
use k256::elliptic_curve::point::AffineCoordinates;
use k256::elliptic_curve::PrimeField;
use k256::schnorr::{Signature, VerifyingKey};
use k256::{FieldBytes, ProjectivePoint, Scalar, U256};
use proptest::prelude::*;
use proptest::sample::Index;
use sha2::{Digest, Sha256};

use super::{all_verify, challenge_of, coefficient, equation_holds, halves, seed, tagged};
use crate::nostr::schnorr::{self, Failure, TABLES};

#[path = "../../../tests/sig_support/mod.rs"]
mod sig_support;
use sig_support::{cases, lower_hex, pool, Item, AUTHORS, MESSAGES};

/// What k256 answers for `item`, in the order the single check fails.
fn reference((id, x, sig): &Item) -> Result<(), Failure> {
    let key = VerifyingKey::from_bytes(x).map_err(|_| Failure::NotAPoint)?;
    let sig = Signature::try_from(&sig[..]).map_err(|_| Failure::BadEncoding)?;
    key.verify_raw(id, &sig).map_err(|_| Failure::DoesNotVerify)
}

/// The batch's verdict through its entry point, from hex as in events.
fn batch_verdict(items: &[Item]) -> bool {
    let hex: Vec<(String, String, String)> = items
        .iter()
        .map(|(id, x, sig)| (lower_hex(id), lower_hex(x), lower_hex(sig)))
        .collect();
    all_verify(
        hex.iter()
            .map(|(id, x, sig)| (id.as_str(), x.as_str(), sig.as_str())),
    )
}

/// secp256k1's field prime `p` and group order `n`, big-endian.
const P: [u8; 32] = be("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f");
const N: [u8; 32] = be("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");

const fn be(hex: &str) -> [u8; 32] {
    let hex = hex.as_bytes();
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 64 {
        out[i / 2] = nibble(hex[i]) << 4 | nibble(hex[i + 1]);
        i += 2;
    }
    out
}

const fn nibble(c: u8) -> u8 {
    if c <= b'9' {
        c - b'0'
    } else {
        c - b'a' + 10
    }
}

/// The `k`-th smallest x (from 1) that is not the x of a point on the curve.
fn off_curve(k: u8) -> [u8; 32] {
    static XS: OnceLock<Vec<[u8; 32]>> = OnceLock::new();
    XS.get_or_init(|| {
        (1u8..)
            .map(|v| {
                let mut x = [0u8; 32];
                x[31] = v;
                x
            })
            .filter(|x| VerifyingKey::from_bytes(x).is_err())
            .take(8)
            .collect()
    })[usize::from(k) % 8]
}

/// `v + small`, big-endian (`small` < 64 leaves p's and n's top bytes alone).
fn plus(mut v: [u8; 32], small: u8) -> [u8; 32] {
    let mut carry = u16::from(small);
    for byte in v.iter_mut().rev() {
        let sum = u16::from(*byte) + carry;
        *byte = sum as u8;
        carry = sum >> 8;
    }
    v
}

#[derive(Debug, Clone, Copy)]
enum Field {
    Id,
    Pubkey,
    R,
    S,
}

/// A value to put in a field.
#[derive(Debug, Clone, Copy)]
enum Edge {
    Zero,
    /// `p + k`, `k` < 64 (≥ p: refused as r and as a key).
    P(u8),
    /// `n + k`, `k` < 64 (≥ n: refused as s).
    N(u8),
    AllOnes,
    /// An x off the curve.
    OffCurve(u8),
    Random([u8; 32]),
}

impl Edge {
    fn bytes(self) -> [u8; 32] {
        match self {
            Edge::Zero => [0; 32],
            Edge::P(k) => plus(P, k),
            Edge::N(k) => plus(N, k),
            Edge::AllOnes => [0xff; 32],
            Edge::OffCurve(k) => off_curve(k),
            Edge::Random(v) => v,
        }
    }
}

/// One adversarial change to one item of a batch.
#[derive(Debug, Clone)]
enum Change {
    /// Flips bit `.1` (0..256, from the first byte's lowest) of a field.
    Flip(Field, u8),
    Set(Field, Edge),
    /// Replaces the item by a copy of another (the same item twice).
    CopyOf(Index),
    /// Puts pool author `.0`'s key on the item.
    KeyOf(usize),
    /// `s := n − s`.
    NegateS,
    /// Signs the item again with a nonce point of odd y left as it is (BIP-340
    /// negates the nonce then): `s = k + e·d` with `x(k·G) = r`, which passes a check
    /// that ignores `y`'s parity. Only for a pool author's key.
    OddNonce(u8),
}

fn field_of(item: &mut Item, field: Field) -> &mut [u8] {
    match field {
        Field::Id => &mut item.0[..],
        Field::Pubkey => &mut item.1[..],
        Field::R => &mut item.2[..32],
        Field::S => &mut item.2[32..],
    }
}

fn apply(items: &mut [Item], at: usize, change: &Change) {
    match change {
        Change::Flip(field, bit) => {
            field_of(&mut items[at], *field)[usize::from(bit / 8)] ^= 1 << (bit % 8);
        }
        Change::Set(field, edge) => field_of(&mut items[at], *field).copy_from_slice(&edge.bytes()),
        Change::CopyOf(from) => items[at] = items[from.index(items.len())],
        Change::KeyOf(author) => items[at].1 = pool()[*author][0].1,
        Change::OddNonce(seed) => {
            if let Some(signed) = odd_nonce(&items[at], *seed) {
                items[at] = signed;
            }
        }
        Change::NegateS => {
            let (_, s) = halves(&items[at].2);
            if let Some(s) = Option::<Scalar>::from(Scalar::from_repr(FieldBytes::from(s))) {
                items[at].2[32..].copy_from_slice(&(-s).to_bytes());
            }
        }
    }
}

/// The secret key of a pool author's `x`, as BIP-340 uses it (its point has an even y).
fn secret_of(x: &[u8; 32]) -> Option<Scalar> {
    let author = (0..AUTHORS as u8).find(|&a| pool()[usize::from(a)][0].1 == *x)?;
    let d = Option::<Scalar>::from(Scalar::from_repr(FieldBytes::from(<[u8; 32]>::from(
        Sha256::digest([b'k', author]),
    ))))?;
    let point = (ProjectivePoint::GENERATOR * d).to_affine();
    Some(if bool::from(point.y_is_odd()) { -d } else { d })
}

/// `item` signed again by its (pool) author with a nonce whose point has an odd y.
fn odd_nonce((id, x, _): &Item, seed: u8) -> Option<Item> {
    let d = secret_of(x)?;
    let (k, point) = (0u8..)
        .map(|tries| {
            let k = <Scalar as Reduce<U256>>::reduce_bytes(&Sha256::digest([seed, tries]));
            (k, (ProjectivePoint::GENERATOR * k).to_affine())
        })
        .find(|(_, point)| bool::from(point.y_is_odd()))?;
    let r: [u8; 32] = point.x().into();
    let e = challenge_of(&tagged(b"BIP0340/challenge"), &r, x, id);
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(&r);
    sig[32..].copy_from_slice(&(k + e * d).to_bytes());
    Some((*id, *x, sig))
}

fn field() -> impl Strategy<Value = Field> {
    prop_oneof![
        Just(Field::Id),
        Just(Field::Pubkey),
        Just(Field::R),
        Just(Field::S)
    ]
}

fn edge() -> impl Strategy<Value = Edge> {
    prop_oneof![
        Just(Edge::Zero),
        (0u8..64).prop_map(Edge::P),
        (0u8..64).prop_map(Edge::N),
        Just(Edge::AllOnes),
        any::<u8>().prop_map(Edge::OffCurve),
        any::<[u8; 32]>().prop_map(Edge::Random),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => (field(), any::<u8>()).prop_map(|(f, bit)| Change::Flip(f, bit)),
        3 => (field(), edge()).prop_map(|(f, e)| Change::Set(f, e)),
        1 => any::<Index>().prop_map(Change::CopyOf),
        1 => (0..AUTHORS).prop_map(Change::KeyOf),
        1 => Just(Change::NegateS),
        1 => any::<u8>().prop_map(Change::OddNonce),
    ]
}

/// Valid items from the pool: 1..=`max` of them by one author or by 2..=8.
fn valid_batch(max: usize) -> impl Strategy<Value = Vec<Item>> {
    prop_oneof![Just(1usize), 2..=AUTHORS]
        .prop_flat_map(move |authors| proptest::collection::vec((0..authors, 0..MESSAGES), 1..=max))
        .prop_map(|picks| picks.into_iter().map(|(a, m)| pool()[a][m]).collect())
}

/// A batch and up to three changes to make to it.
fn batch() -> impl Strategy<Value = (Vec<Item>, Vec<(Index, Change)>)> {
    (
        valid_batch(64),
        proptest::collection::vec((any::<Index>(), change()), 0..=3),
    )
}

/// The batch's answers for `items` against k256's: true exactly when every item
/// verifies, and an encoding k256 refuses (the key, r or s) refused before the
/// equation.
fn check_batch(items: &[Item]) -> Result<(), TestCaseError> {
    let expected: Vec<Result<(), Failure>> = items.iter().map(reference).collect();
    let all_valid = expected.iter().all(Result::is_ok);
    prop_assert_eq!(batch_verdict(items), all_valid, "expected {:?}", expected);
    let refused = expected
        .iter()
        .any(|r| matches!(r, Err(Failure::NotAPoint | Failure::BadEncoding)));
    let equation = equation_holds(items);
    if refused {
        prop_assert_eq!(
            equation,
            None,
            "an encoding k256 refuses reached the equation"
        );
    } else if all_valid {
        prop_assert_eq!(equation, Some(true));
    }
    Ok(())
}

/// The single check's answers for `items` against k256's, on a thread with no known
/// keys, each item checked twice: a key's first check goes by k256's path, its later
/// ones by its table (asserted when the items have at most [`TABLES`] keys, so that
/// every key gets one).
fn check_single(items: &[Item]) -> Result<(), TestCaseError> {
    schnorr::forget_keys();
    let keys: std::collections::BTreeSet<[u8; 32]> = items
        .iter()
        .map(|item| item.1)
        .filter(|x| VerifyingKey::from_bytes(x).is_ok())
        .collect();
    for (i, item) in items.iter().enumerate() {
        let expected = reference(item);
        for round in 0..2 {
            prop_assert_eq!(
                schnorr::verify(&item.0, &item.1, &item.2),
                expected,
                "item {} round {}",
                i,
                round
            );
        }
        if keys.contains(&item.1) && keys.len() <= TABLES {
            prop_assert!(
                schnorr::holds_table(&item.1),
                "item {} was not checked with a table",
                i
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(40))]

    /// The batch and the single check (by k256's path, then by the key's table) answer
    /// what k256 answers, for every item.
    #[test]
    fn batch_and_single_checks_answer_what_k256_answers((mut items, changes) in batch()) {
        for (at, change) in &changes {
            let at = at.index(items.len());
            apply(&mut items, at, change);
        }
        check_batch(&items)?;
        check_single(&items)?;
    }

    /// Two invalid signatures whose errors cancel when the coefficients are what an
    /// attacker predicts: `sⱼ + âₖδ` and `sₖ − âⱼδ` leave `Σ âᵢsᵢ` as it was, so the
    /// equation would hold with the coefficients `â`. Predictions: all ones; the
    /// coefficients of the untouched batch (what they stay if the seed skips s); a
    /// generator seeded by a constant (coefficients from the index alone).
    #[test]
    fn sets_that_cancel_under_predictable_coefficients_are_refused(
        items in valid_batch(64).prop_filter("two items", |items| items.len() >= 2),
        j in any::<Index>(),
        k in any::<Index>(),
        delta in any::<[u8; 32]>(),
        prediction in 0..3u8,
    ) {
        let n = items.len();
        let j = j.index(n);
        let k = (j + 1 + k.index(n - 1)) % n;
        let delta = <Scalar as Reduce<U256>>::reduce_bytes(&delta.into());
        let delta = if bool::from(delta.is_zero()) { Scalar::ONE } else { delta };
        let original_seed = seed(&items);
        let predicted = |i: usize| -> Scalar {
            Scalar::from(match prediction {
                0 => 1,
                1 => coefficient(&original_seed, i),
                _ => coefficient(&[0; 32], i),
            })
        };
        let s_of = |item: &Item| {
            Option::<Scalar>::from(Scalar::from_repr(FieldBytes::from(halves(&item.2).1)))
                .expect("a valid s")
        };
        let mut forged = items.clone();
        let (aj, ak) = (predicted(j), predicted(k));
        let sj = s_of(&items[j]) + ak * delta;
        let sk = s_of(&items[k]) - aj * delta;
        forged[j].2[32..].copy_from_slice(&sj.to_bytes());
        forged[k].2[32..].copy_from_slice(&sk.to_bytes());
        // The forged set cancels under the prediction...
        prop_assert_eq!(
            aj * sj + ak * sk,
            aj * s_of(&items[j]) + ak * s_of(&items[k])
        );
        // ...its two changed items are invalid...
        prop_assert!(reference(&forged[j]).is_err() && reference(&forged[k]).is_err());
        // ...and the batch refuses it, by the equation (the encodings are fine).
        prop_assert_eq!(equation_holds(&forged), Some(false));
        check_batch(&forged)?;
    }
}

/// Every edge value in every field of the first, a middle and the last item of a
/// batch of 5 by two authors: the batch and the single check answer what k256 answers
/// (the property's changes reach each of these only now and then).
#[test]
fn every_edge_value_in_every_field_answers_what_k256_answers() {
    let valid: Vec<Item> = (0..5).map(|i| pool()[i % 2][i]).collect();
    let edges = [
        Edge::Zero,
        Edge::P(0),
        Edge::P(1),
        Edge::N(0),
        Edge::N(1),
        Edge::AllOnes,
        Edge::OffCurve(0),
        Edge::OffCurve(1),
    ];
    for at in [0, 2, 4] {
        for field in [Field::Id, Field::Pubkey, Field::R, Field::S] {
            for edge in edges {
                let mut items = valid.clone();
                apply(&mut items, at, &Change::Set(field, edge));
                let context = format!("{edge:?} as {field:?} of item {at}");
                check_batch(&items).expect(&context);
                check_single(&items).expect(&context);
            }
        }
        for change in [Change::NegateS, Change::OddNonce(at as u8)] {
            let mut items = valid.clone();
            apply(&mut items, at, &change);
            let context = format!("{change:?} of item {at}");
            assert!(reference(&items[at]).is_err(), "{context}");
            check_batch(&items).expect(&context);
            check_single(&items).expect(&context);
        }
    }
}

/// A batch of 300 (a Pippenger window of 6 bits, where the property's batches have at
/// most 4), valid, then with one bad item at the start, the middle or the end, then
/// with a pair that cancels under coefficients 1 and 1.
#[test]
fn a_batch_of_300_answers_what_k256_answers() {
    let valid: Vec<Item> = (0..300)
        .map(|i| pool()[(i * 7) % AUTHORS][(i * 5) % MESSAGES])
        .collect();
    assert!(valid.iter().all(|item| reference(item).is_ok()));
    assert!(batch_verdict(&valid));
    for at in [0, 150, 299] {
        for change in [
            Change::Flip(Field::S, 200),
            Change::Flip(Field::Id, 255),
            Change::Set(Field::S, Edge::N(0)),
            Change::KeyOf((at + 1) % AUTHORS),
        ] {
            let mut items = valid.clone();
            apply(&mut items, at, &change);
            assert!(reference(&items[at]).is_err(), "{change:?} at {at}");
            assert!(!batch_verdict(&items), "{change:?} at {at}");
        }
    }
    let mut cancelling = valid.clone();
    for (at, delta) in [(17, Scalar::from(12345u64)), (200, -Scalar::from(12345u64))] {
        let s = Option::<Scalar>::from(Scalar::from_repr(FieldBytes::from(
            halves(&cancelling[at].2).1,
        )))
        .expect("s");
        cancelling[at].2[32..].copy_from_slice(&(s + delta).to_bytes());
        assert!(reference(&cancelling[at]).is_err());
    }
    assert!(!batch_verdict(&cancelling));
}
