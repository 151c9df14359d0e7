//! BIP-340 batch verification: many Schnorr signatures checked with one equation.
//!
//! Checking `u` signatures one by one costs `u` double-scalar multiplications
//! (`s·G − e·P`, then an inversion to compare `x(R)`). BIP-340's batch algorithm
//! ("Batch Verification" in the BIP) instead lifts every `R` from its `x` (one square
//! root) and checks
//!
//! ```text
//! (s₁ + a₂s₂ + … + aᵤsᵤ)·G = R₁ + a₂·R₂ + … + aᵤ·Rᵤ + e₁·P₁ + a₂e₂·P₂ + … + aᵤeᵤ·Pᵤ
//! ```
//!
//! with coefficients `a₂…aᵤ` drawn from a generator seeded by a hash of every input.
//! The `P` terms of one author add up to one scalar multiplication (an outbox holds
//! mostly its user's events), and the `R` terms are one multi-scalar multiplication
//! (Pippenger's bucket method) with 128-bit coefficients: a few point additions per
//! signature instead of a few hundred.
//!
//! The equation holds for valid signatures; when any one of them is invalid it fails
//! except with probability about 2⁻¹²⁸ (the coefficients are 128 bits, as in other
//! batch verifiers). A failed batch says only that *some* signature is bad, so
//! [`super::SignatureCheck::first_bad`] then checks one by one: single verification
//! stays the ground truth for which one and why.
//!
//! Everything here is public data, so nothing needs to run in constant time.

use k256::elliptic_curve::group::Group;
use k256::elliptic_curve::ops::{LinearCombination, Reduce};
use k256::elliptic_curve::point::DecompactPoint;
use k256::elliptic_curve::PrimeField;
use k256::schnorr::{Signature, VerifyingKey};
use k256::{AffinePoint, FieldBytes, ProjectivePoint, Scalar, U256};
use sha2::{Digest, Sha256};

use super::event::lower_hex;

/// True when every `(id, pubkey, sig)` (hex, as in an event) is a valid BIP-340
/// signature of the id by the pubkey, up to the 2⁻¹²⁸ chance above. False when any
/// one is not (or cannot be decoded): the caller finds which by checking one by one.
pub(super) fn all_verify<'a>(
    items: impl ExactSizeIterator<Item = (&'a str, &'a str, &'a str)>,
) -> bool {
    let mut decoded = Vec::with_capacity(items.len());
    for (id, pubkey, sig) in items {
        match (
            lower_hex::<32>(id),
            lower_hex::<32>(pubkey),
            lower_hex::<64>(sig),
        ) {
            (Some(id), Some(pubkey), Some(sig)) => decoded.push((id, pubkey, sig)),
            _ => return false,
        }
    }
    equation_holds(&decoded).unwrap_or(false)
}

/// One author's key and the sum of `aᵢeᵢ` over that author's signatures.
struct Author {
    x: [u8; 32],
    point: ProjectivePoint,
    coefficient: Scalar,
}

/// The batch equation over decoded `(id, pubkey, sig)`; `None` when a key, a
/// signature encoding or an `R` cannot be lifted (that signature is invalid).
fn equation_holds(items: &[([u8; 32], [u8; 32], [u8; 64])]) -> Option<bool> {
    // The coefficients come from a seed that hashes every byte of every item: its
    // pubkey, id, r and s. That is what makes the check sound. The equation is the
    // items' equations added up with the coefficients as weights, so errors cancel
    // whenever whoever makes the items can predict the weights: with weights 1 and 1,
    // `s₁ + δ` and `s₂ − δ` (both invalid) leave the sum as it was; with any weights
    // `aⱼ`, `aₖ` known in advance, `sⱼ + aₖδ` and `sₖ − aⱼδ` do. A byte left out of
    // the seed is a byte that can be changed after the weights are known. Hashed
    // whole, any change changes every weight, and a cancelling set costs about 2¹²⁸
    // tries. (Tests: `coefficients_depend_on_every_byte_of_every_item`, and the
    // cancelling sets in `props`.)
    let seed = seed(items);
    let challenge = tagged(b"BIP0340/challenge");

    let mut authors: Vec<Author> = Vec::new();
    let mut rs: Vec<(ProjectivePoint, u128)> = Vec::with_capacity(items.len());
    let mut s_sum = Scalar::ZERO;
    for (i, (id, pubkey, sig)) in items.iter().enumerate() {
        // The same checks as single verification: the key lifts, r < p and r ≠ 0,
        // 0 < s < n; then R = lift_x(r), which single verification compares x(R) to.
        let at = match authors.iter().rposition(|a| a.x == *pubkey) {
            Some(at) => at,
            None => {
                let key = VerifyingKey::from_bytes(pubkey).ok()?;
                authors.push(Author {
                    x: *pubkey,
                    point: ProjectivePoint::from(*key.as_affine()),
                    coefficient: Scalar::ZERO,
                });
                authors.len() - 1
            }
        };
        Signature::try_from(&sig[..]).ok()?;
        let (r, s) = halves(sig);
        let big_r = Option::<AffinePoint>::from(AffinePoint::decompact(&FieldBytes::from(r)))?;
        let s = Option::<Scalar>::from(Scalar::from_repr(FieldBytes::from(s)))?;
        let e = challenge_of(&challenge, &r, pubkey, id);
        let a = coefficient(&seed, i);
        let a_scalar = Scalar::from(a);
        s_sum += a_scalar * s;
        authors[at].coefficient += a_scalar * e;
        rs.push((ProjectivePoint::from(big_r), a));
    }

    // S·G − Σ cₖ·Pₖ − Σ aᵢ·Rᵢ must be the point at infinity. The G and P terms go
    // two at a time through the double-scalar multiplication single checks use.
    let mut total = -sum_of_multiples(&rs);
    let mut terms = authors.iter().map(|a| (a.point, -a.coefficient));
    let mut first = Some((ProjectivePoint::GENERATOR, s_sum));
    while let Some((x, k)) = first.take().or_else(|| terms.next()) {
        let (y, l) = terms
            .next()
            .unwrap_or((ProjectivePoint::IDENTITY, Scalar::ZERO));
        total += ProjectivePoint::lincomb(&x, &k, &y, &l);
    }
    Some(bool::from(total.is_identity()))
}

/// The seed of the coefficients: SHA-256 over every item's pubkey, id and signature
/// (all fixed-length, so the concatenation is unambiguous).
fn seed(items: &[([u8; 32], [u8; 32], [u8; 64])]) -> [u8; 32] {
    let mut seed = Sha256::new();
    for (id, pubkey, sig) in items {
        seed.update(pubkey);
        seed.update(id);
        seed.update(sig);
    }
    seed.finalize().into()
}

/// `aᵢ`: 1 for the first signature (as in BIP-340), then 128 bits of
/// `SHA-256(seed ‖ i)`, never zero.
fn coefficient(seed: &[u8; 32], i: usize) -> u128 {
    if i == 0 {
        return 1;
    }
    let block: [u8; 32] = Sha256::new()
        .chain_update(seed)
        .chain_update((i as u64).to_be_bytes())
        .finalize()
        .into();
    let mut first = [0u8; 16];
    first.copy_from_slice(&block[..16]);
    u128::from_be_bytes(first).max(1)
}

/// SHA-256 with BIP-340's tag prefix already absorbed.
pub(super) fn tagged(tag: &[u8]) -> Sha256 {
    let tag_hash = Sha256::digest(tag);
    Sha256::new().chain_update(tag_hash).chain_update(tag_hash)
}

/// BIP-340's challenge `e = hash_challenge(r ‖ P ‖ m) mod n`, from `prefix`, the
/// hasher `tagged(b"BIP0340/challenge")` gives (made once, cloned here).
pub(super) fn challenge_of(
    prefix: &Sha256,
    r: &[u8; 32],
    pubkey: &[u8; 32],
    id: &[u8; 32],
) -> Scalar {
    <Scalar as Reduce<U256>>::reduce_bytes(
        &prefix
            .clone()
            .chain_update(r)
            .chain_update(pubkey)
            .chain_update(id)
            .finalize(),
    )
}

/// A signature's `r` and `s` bytes.
pub(super) fn halves(sig: &[u8; 64]) -> ([u8; 32], [u8; 32]) {
    let (mut r, mut s) = ([0u8; 32], [0u8; 32]);
    r.copy_from_slice(&sig[..32]);
    s.copy_from_slice(&sig[32..]);
    (r, s)
}

/// The width (bits) of a Pippenger window for `n` terms with 128-bit coefficients:
/// the one with the fewest additions by the cost model of [`sum_of_multiples`].
fn window_bits(n: usize) -> usize {
    (1..=16)
        .min_by_key(|&w| {
            let windows = 128usize.div_ceil(w);
            // Per window: one addition per term, two per bucket; plus the doublings.
            windows * (n + (2usize << w)) + 128
        })
        .unwrap_or(4)
}

/// `Σ aᵢ·Pᵢ` by Pippenger's bucket method: for each `w`-bit window of the
/// coefficients (from the top), add each point into the bucket of its digit, then
/// add up `Σ d·bucket[d]` as running sums, after doubling the total `w` times.
fn sum_of_multiples(terms: &[(ProjectivePoint, u128)]) -> ProjectivePoint {
    let w = window_bits(terms.len());
    let windows = 128usize.div_ceil(w);
    let mask = (1u128 << w) - 1;
    let mut buckets = vec![ProjectivePoint::IDENTITY; (1usize << w) - 1];
    let mut total = ProjectivePoint::IDENTITY;
    for window in (0..windows).rev() {
        if window + 1 != windows {
            for _ in 0..w {
                total = total.double();
            }
        }
        buckets.fill(ProjectivePoint::IDENTITY);
        let shift = window * w;
        for (point, a) in terms {
            let digit = ((a >> shift) & mask) as usize;
            if digit != 0 {
                buckets[digit - 1] += point;
            }
        }
        let mut running = ProjectivePoint::IDENTITY;
        for bucket in buckets.iter().rev() {
            running += bucket;
            total += running;
        }
    }
    total
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use k256::schnorr::SigningKey;

    /// `n` signatures by `authors` keys over distinct ids, as hex triples.
    fn signed(n: usize, authors: u8) -> Vec<(String, String, String)> {
        (0..n)
            .map(|i| {
                let key = SigningKey::from_bytes(&[1 + (i % authors as usize) as u8; 32])
                    .expect("test key");
                let id: [u8; 32] = Sha256::digest((i as u64).to_be_bytes()).into();
                let sig = key
                    .sign_raw(&id, &[7u8; 32])
                    .expect("test signature")
                    .to_bytes();
                (
                    hex::encode(id),
                    hex::encode(key.verifying_key().to_bytes()),
                    hex::encode(sig),
                )
            })
            .collect()
    }

    fn batch(items: &[(String, String, String)]) -> bool {
        all_verify(
            items
                .iter()
                .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())),
        )
    }

    /// The coefficients equation_holds uses for `items`.
    fn coefficients(items: &[([u8; 32], [u8; 32], [u8; 64])]) -> Vec<u128> {
        let seed = seed(items);
        (0..items.len()).map(|i| coefficient(&seed, i)).collect()
    }

    /// The invariant at the seed (see `equation_holds`): changing any one byte of any
    /// item's id, pubkey, r or s changes the coefficient of every item but the first
    /// (whose coefficient is 1). Every byte of every item, in batches of 2, 3 and 5.
    #[test]
    fn coefficients_depend_on_every_byte_of_every_item() {
        for n in [2usize, 3, 5] {
            let items: Vec<([u8; 32], [u8; 32], [u8; 64])> = (0..n)
                .map(|i| {
                    let bytes = |tag: u8| -> [u8; 32] { Sha256::digest([tag, i as u8]).into() };
                    let mut sig = [0u8; 64];
                    sig[..32].copy_from_slice(&bytes(2));
                    sig[32..].copy_from_slice(&bytes(3));
                    (bytes(0), bytes(1), sig)
                })
                .collect();
            let before = coefficients(&items);
            assert_eq!(before[0], 1);
            for at in 0..n {
                // 0..32 the id, 32..64 the pubkey, 64..96 r, 96..128 s.
                for byte in 0..128 {
                    for flip in [0x01u8, 0x80] {
                        let mut changed = items.clone();
                        let (id, pubkey, sig) = &mut changed[at];
                        match byte {
                            0..32 => id[byte] ^= flip,
                            32..64 => pubkey[byte - 32] ^= flip,
                            _ => sig[byte - 64] ^= flip,
                        }
                        let after = coefficients(&changed);
                        assert_eq!(after[0], 1);
                        for i in 1..n {
                            assert_ne!(
                                after[i], before[i],
                                "n = {n}: byte {byte} of item {at} leaves coefficient {i}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn sum_of_multiples_matches_scalar_multiplication() {
        for n in [0usize, 1, 2, 3, 17, 200] {
            let terms: Vec<(ProjectivePoint, u128)> = (0..n)
                .map(|i| {
                    let p = ProjectivePoint::GENERATOR * Scalar::from(i as u64 + 3);
                    let a = (u128::MAX / (i as u128 + 1)) ^ ((i as u128) << 77);
                    (p, a)
                })
                .collect();
            let expected = terms.iter().fold(ProjectivePoint::IDENTITY, |acc, (p, a)| {
                acc + *p * Scalar::from(*a)
            });
            assert_eq!(sum_of_multiples(&terms), expected, "n = {n}");
        }
    }

    #[test]
    fn window_grows_with_the_batch() {
        assert!(window_bits(1) <= window_bits(100));
        assert!(window_bits(100) < window_bits(10_000));
        assert!((1..=16).contains(&window_bits(1 << 20)));
    }

    #[test]
    fn valid_batches_pass_with_one_or_many_authors() {
        for (n, authors) in [(1, 1), (2, 1), (5, 2), (64, 1), (130, 7)] {
            assert!(batch(&signed(n, authors)), "n = {n}, authors = {authors}");
        }
        assert!(all_verify(std::iter::empty()));
    }

    #[test]
    fn any_one_bad_signature_fails_the_batch() {
        let good = signed(40, 3);
        for at in [0, 1, 20, 39] {
            // A flipped bit in r, in s, in the id; another author's key; a non-hex sig.
            let mut cases = Vec::new();
            for (field, bit) in [(2, 3), (2, 100), (0, 5)] {
                let mut items = good.clone();
                let bytes: &mut String = match field {
                    0 => &mut items[at].0,
                    _ => &mut items[at].2,
                };
                let mut raw = lower_hex::<64>(bytes)
                    .map(|b| b.to_vec())
                    .or_else(|| lower_hex::<32>(bytes).map(|b| b.to_vec()))
                    .expect("hex");
                raw[bit / 8] ^= 1 << (bit % 8);
                *bytes = hex::encode(&raw);
                cases.push(items);
            }
            let mut other_key = good.clone();
            other_key[at].1 = good
                .iter()
                .map(|g| g.1.clone())
                .find(|k| *k != good[at].1)
                .expect("another author");
            cases.push(other_key);
            let mut not_hex = good.clone();
            not_hex[at].2 = "zz".repeat(64);
            cases.push(not_hex);
            for items in cases {
                assert!(!batch(&items), "bad item at {at} passed");
            }
        }
    }

    /// A signature whose nonce point has an odd y (BIP-340 vector 6 makes the same
    /// point): `s = k + e·d` with the unnegated `k`. Single verification rejects it; so
    /// must the batch, which lifts `R` with an even y.
    #[test]
    fn an_odd_nonce_point_fails_the_batch() {
        let d_bytes = [5u8; 32];
        let key = SigningKey::from_bytes(&d_bytes).expect("test key");
        let pubkey: [u8; 32] = key.verifying_key().to_bytes().into();
        let d = Option::<Scalar>::from(Scalar::from_repr(d_bytes.into())).expect("scalar");
        // The secret as BIP-340 uses it: negated when its point has an odd y.
        let d = if ProjectivePoint::GENERATOR * d
            == ProjectivePoint::from(*key.verifying_key().as_affine())
        {
            d
        } else {
            -d
        };
        let id = [9u8; 32];
        let mut found = false;
        for k in 1u64..64 {
            let k = Scalar::from(k);
            let r_point = (ProjectivePoint::GENERATOR * k).to_affine();
            let encoded =
                k256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(&r_point, false);
            let y_odd = encoded.y().map(|y| y[31] & 1 == 1).unwrap_or(false);
            if !y_odd {
                continue;
            }
            let x = encoded.x().expect("x");
            let mut x_bytes = [0u8; 32];
            x_bytes.copy_from_slice(x);
            let e = challenge_of(&tagged(b"BIP0340/challenge"), &x_bytes, &pubkey, &id);
            let s = k + e * d;
            let mut sig = [0u8; 64];
            sig[..32].copy_from_slice(x);
            sig[32..].copy_from_slice(&s.to_bytes());
            let item = (hex::encode(id), hex::encode(pubkey), hex::encode(sig));
            let vk = VerifyingKey::from_bytes(&pubkey).expect("key");
            let single = Signature::try_from(&sig[..])
                .map(|sig| vk.verify_raw(&id, &sig).is_ok())
                .unwrap_or(false);
            assert!(!single, "single verification rejects an odd R");
            let mut items = signed(10, 1);
            items.insert(4, item);
            assert!(!batch(&items));
            found = true;
            break;
        }
        assert!(found, "some small nonce has an odd y");
    }

    /// BIP-340's verification vectors 4–14 (32-byte messages): each, put in a batch of
    /// good signatures, makes the batch pass exactly when it verifies alone.
    #[test]
    fn bip340_vectors_in_a_batch_agree_with_single_verification() {
        let vectors = [
            ("d69c3509bb99e412e68b0fe8544e72837dfa30746d8be2aa65975f29d22dc7b9", "4df3c3f68fcc83b27e9d42c90431a72499f17875c81a599b566c9889b9696703", "00000000000000000000003b78ce563f89a0ed9414f5aa28ad0d96d6795f9c6376afb1548af603b3eb45c9f8207dee1060cb71c04e80f593060b07d28308d7f4", true),
            ("eefdea4cdb677750a420fee807eacf21eb9898ae79b9768766e4faa04a2d4a34", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "6cff5c3ba86c69ea4b7376f31a9bcb4f74c1976089b2d9963da2e5543e17776969e89b4c5564d00349106b8497785dd7d1d713a8ae82b32fa79d5f7fc407d39b", false),
            ("dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "fff97bd5755eeea420453a14355235d382f6472f8568a18b2f057a14602975563cc27944640ac607cd107ae10923d9ef7a73c643e166be5ebeafa34b1ac553e2", false),
            ("dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "1fa62e331edbc21c394792d2ab1100a7b432b013df3f6ff4f99fcb33e0e1515f28890b3edb6e7189b630448b515ce4f8622a954cfe545735aaea5134fccdb2bd", false),
            ("dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "6cff5c3ba86c69ea4b7376f31a9bcb4f74c1976089b2d9963da2e5543e177769961764b3aa9b2ffcb6ef947b6887a226e8d7c93e00c5ed0c1834ff0d0c2e6da6", false),
            ("dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "0000000000000000000000000000000000000000000000000000000000000000123dda8328af9c23a94c1feecfd123ba4fb73476f0d594dcb65c6425bd186051", false),
            ("dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "00000000000000000000000000000000000000000000000000000000000000017615fbaf5ae28864013c099742deadb4dba87f11ac6754f93780d5a1837cf197", false),
            ("dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "4a298dacae57395a15d0795ddbfd1dcb564da82b0f269bc70a74f8220429ba1d69e89b4c5564d00349106b8497785dd7d1d713a8ae82b32fa79d5f7fc407d39b", false),
            ("dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f69e89b4c5564d00349106b8497785dd7d1d713a8ae82b32fa79d5f7fc407d39b", false),
            ("dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "6cff5c3ba86c69ea4b7376f31a9bcb4f74c1976089b2d9963da2e5543e177769fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", false),
            ("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc30", "243f6a8885a308d313198a2e03707344a4093822299f31d0082efa98ec4e6c89", "6cff5c3ba86c69ea4b7376f31a9bcb4f74c1976089b2d9963da2e5543e17776969e89b4c5564d00349106b8497785dd7d1d713a8ae82b32fa79d5f7fc407d39b", false),
        ];
        for (pubkey, message, sig, valid) in vectors {
            let single = match (
                lower_hex::<32>(pubkey).and_then(|k| VerifyingKey::from_bytes(&k).ok()),
                lower_hex::<64>(sig).and_then(|s| Signature::try_from(&s[..]).ok()),
                lower_hex::<32>(message),
            ) {
                (Some(key), Some(sig), Some(m)) => key.verify_raw(&m, &sig).is_ok(),
                _ => false,
            };
            assert_eq!(single, valid, "single verification of {sig}");
            let mut items = signed(6, 2);
            items.insert(3, (message.to_owned(), pubkey.to_owned(), sig.to_owned()));
            assert_eq!(batch(&items), valid, "batch with {sig}");
            assert_eq!(batch(&items[3..4]), valid, "alone: {sig}");
        }
    }
}
