//! Single BIP-340 verification, faster for the keys an outbox sees again.
//!
//! A check computes `R = s·G − e·P` and compares `x(R)` with the signature's `r`.
//! k256's `VerifyingKey::verify_raw` does that with one double-scalar multiplication
//! (4-bit windows over both scalars, split by the curve's endomorphism): about 128
//! point doublings and 132 additions, on top of lifting the key from its `x` (one
//! square root) for every event.
//!
//! An outbox mostly checks its own user's events, by one key. This module keeps the
//! keys it has seen ([`KNOWN_KEYS`], lifted once) and, for a key checked a second time,
//! a fixed-base table of its multiples ([`Comb`], about 32 KB; at most [`TABLES`] keys
//! hold one: with `G`'s, at most about 160 KB of memory). With a table for `P` and one
//! for `G`, each multiplication is 65 additions and 4 doublings, with no doubling
//! chain: the check costs about half.
//! Keys without a table go through k256's `verify_raw`, which stays the reference:
//! the tests check that both paths answer the same.
//!
//! Which keys hold a table: the most used. A key gets one when it is checked a second
//! time and a slot is free, or when it has been checked more often than the least used
//! holder (which loses its table). A key's count only grows while it is known, so a
//! rotation of authors cannot make tables be rebuilt on every check. The known keys
//! are forgotten least used (then least recent) first.
//!
//! Everything here is public data, so nothing needs to run in constant time.

use std::cell::RefCell;

use k256::elliptic_curve::group::prime::PrimeCurveAffine;
use k256::elliptic_curve::point::AffineCoordinates;
use k256::elliptic_curve::PrimeField;
use k256::schnorr::{Signature, VerifyingKey};
use k256::{FieldBytes, ProjectivePoint, Scalar};

use super::batch::{challenge_of, halves, tagged};

/// How many keys stay lifted.
pub(super) const KNOWN_KEYS: usize = 16;
/// How many keys hold a fixed-base table at once.
pub(super) const TABLES: usize = 4;

/// Why a check failed, in the order single verification checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    /// The pubkey is not the `x` of a point on the curve.
    NotAPoint,
    /// `r ≥ p`, `r = 0`, `s ≥ n` or `s = 0`.
    BadEncoding,
    /// The equation does not hold.
    DoesNotVerify,
}

/// Checks the BIP-340 signature `sig` of `id` by the x-only `pubkey`.
///
/// A check that never returned (in wasm a panic aborts: the instance traps, and the
/// page goes on calling it) leaves the known keys borrowed for good; every check after
/// it then goes through k256 alone ([`verify_uncached`]), slower but answering the
/// same, instead of failing every event the page enqueues from then on.
pub(super) fn verify(id: &[u8; 32], pubkey: &[u8; 32], sig: &[u8; 64]) -> Result<(), Failure> {
    KEYS.with(|keys| match keys.try_borrow_mut() {
        Ok(mut keys) => keys.verify(id, pubkey, sig),
        Err(_) => verify_uncached(id, pubkey, sig),
    })
}

/// [`verify`] without the known keys: k256's `verify_raw`, the failures in the same
/// order.
fn verify_uncached(id: &[u8; 32], pubkey: &[u8; 32], sig: &[u8; 64]) -> Result<(), Failure> {
    let key = VerifyingKey::from_bytes(pubkey).map_err(|_| Failure::NotAPoint)?;
    let signature = Signature::try_from(&sig[..]).map_err(|_| Failure::BadEncoding)?;
    key.verify_raw(id, &signature)
        .map_err(|_| Failure::DoesNotVerify)
}

/// `x(s·G − e·P) = r` with `y` even, by the two tables; `sig`'s encoding is already
/// checked (`0 < r < p`, `0 < s < n`).
fn equation_holds(g: &Comb, p: &Comb, id: &[u8; 32], pubkey: &[u8; 32], sig: &[u8; 64]) -> bool {
    let (r, s) = halves(sig);
    let Some(s) = Option::<Scalar>::from(Scalar::from_repr(FieldBytes::from(s))) else {
        return false;
    };
    let e = challenge_of(&tagged(b"BIP0340/challenge"), &r, pubkey, id);
    let big_r = (g.mul(&s) + p.mul(&-e)).to_affine();
    !bool::from(big_r.is_identity()) && !bool::from(big_r.y_is_odd()) && big_r.x()[..] == r
}

/// A fixed-base table of a point `P`: `j · 256^i · P` for `j` in 1..=8 and `i` in
/// 0..33. `k·P` is then a sum of one entry (or its negation) per signed radix-16
/// digit of `k`, the odd digits' sum multiplied by 16 at the end: 65 additions and 4
/// doublings. (Affine entries would make the additions about 8 % cheaper, but the
/// batch inversion that makes them cost the `.wasm` 1.4 KB gzipped.)
pub(super) struct Comb(Vec<ProjectivePoint>);

const ROWS: usize = 33;

impl Comb {
    /// The table of `point` (about 256 doublings and 231 additions: the cost of about
    /// one and a half checks).
    pub(super) fn new(point: ProjectivePoint) -> Comb {
        let mut multiples = Vec::with_capacity(ROWS * 8);
        let mut base = point;
        for _ in 0..ROWS {
            let mut multiple = base;
            multiples.push(multiple);
            for _ in 1..8 {
                multiple += base;
                multiples.push(multiple);
            }
            for _ in 0..8 {
                base = base.double();
            }
        }
        Comb(multiples)
    }

    /// `k·P`.
    pub(super) fn mul(&self, k: &Scalar) -> ProjectivePoint {
        let digits = radix16(k);
        let mut even = ProjectivePoint::IDENTITY;
        let mut odd = ProjectivePoint::IDENTITY;
        for row in 0..ROWS {
            self.add_digit(&mut even, row, digits[2 * row]);
            if row + 1 < ROWS {
                self.add_digit(&mut odd, row, digits[2 * row + 1]);
            }
        }
        for _ in 0..4 {
            odd = odd.double();
        }
        even + odd
    }

    /// Adds `digit` times row `row`'s base to `acc` (one call site for the addition:
    /// the `.wasm` carries each inlined field operation once).
    #[inline(never)]
    fn add_digit(&self, acc: &mut ProjectivePoint, row: usize, digit: i8) {
        if digit == 0 {
            return;
        }
        let entry = self.0[row * 8 + usize::from(digit.unsigned_abs()) - 1];
        *acc += if digit < 0 { -entry } else { entry };
    }
}

/// `k` as 65 signed radix-16 digits, least significant first: digits 0..64 in
/// -8..=7, the last 0 or 1, `k = Σ dᵢ·16ⁱ`.
fn radix16(k: &Scalar) -> [i8; 65] {
    let bytes = k.to_bytes();
    let mut digits = [0i8; 65];
    let mut carry = 0i8;
    for (i, digit) in digits.iter_mut().take(64).enumerate() {
        let byte = bytes[31 - i / 2];
        let nibble = if i % 2 == 0 { byte & 15 } else { byte >> 4 } as i8;
        let v = nibble + carry;
        carry = (v + 8) >> 4;
        *digit = v - (carry << 4);
    }
    digits[64] = carry;
    digits
}

/// A key seen by [`verify`].
struct Known {
    x: [u8; 32],
    key: VerifyingKey,
    /// Checks by this key since it became known.
    uses: u32,
    /// When it was last used ([`Keys::clock`]).
    last: u64,
    table: Option<Comb>,
}

/// The known keys and the generator's table.
struct Keys {
    known: Vec<Known>,
    clock: u64,
    generator: Option<Comb>,
    /// Tables built, for the tests.
    built: u64,
}

impl Keys {
    const fn new() -> Keys {
        Keys {
            known: Vec::new(),
            clock: 0,
            generator: None,
            built: 0,
        }
    }

    /// [`verify`] with these keys: the key of `pubkey` is lifted once, counted as
    /// used, and checks with its table when it holds one (built now when it earns
    /// one).
    fn verify(&mut self, id: &[u8; 32], pubkey: &[u8; 32], sig: &[u8; 64]) -> Result<(), Failure> {
        self.clock += 1;
        let at = match self.known.iter().position(|k| k.x == *pubkey) {
            Some(at) => at,
            None => {
                let key = VerifyingKey::from_bytes(pubkey).map_err(|_| Failure::NotAPoint)?;
                if self.known.len() == KNOWN_KEYS {
                    if let Some(gone) = self.least_used(false) {
                        self.known.swap_remove(gone);
                    }
                }
                self.known.push(Known {
                    x: *pubkey,
                    key,
                    uses: 0,
                    last: 0,
                    table: None,
                });
                self.known.len() - 1
            }
        };
        let known = &mut self.known[at];
        known.uses = known.uses.saturating_add(1);
        known.last = self.clock;
        if known.table.is_none() && known.uses >= 2 {
            self.give_table(at);
        }
        let signature = Signature::try_from(&sig[..]).map_err(|_| Failure::BadEncoding)?;
        let known = &self.known[at];
        let holds = match &known.table {
            Some(table) => {
                let built = &mut self.built;
                let generator = self.generator.get_or_insert_with(|| {
                    *built += 1;
                    Comb::new(ProjectivePoint::GENERATOR)
                });
                equation_holds(generator, table, id, pubkey, sig)
            }
            None => known.key.verify_raw(id, &signature).is_ok(),
        };
        if holds {
            Ok(())
        } else {
            Err(Failure::DoesNotVerify)
        }
    }

    /// Builds a table for the key at `at` if a slot is free or the least used holder
    /// has been used less (it loses its table).
    fn give_table(&mut self, at: usize) {
        let holders = self.known.iter().filter(|k| k.table.is_some()).count();
        if holders >= TABLES {
            match self.least_used(true) {
                Some(holder) if self.known[holder].uses < self.known[at].uses => {
                    self.known[holder].table = None;
                }
                _ => return,
            }
        }
        let point = ProjectivePoint::from(*self.known[at].key.as_affine());
        self.known[at].table = Some(Comb::new(point));
        self.built += 1;
    }

    /// The least used known key (among the table holders if `holders`), the least
    /// recent first.
    fn least_used(&self, holders: bool) -> Option<usize> {
        self.known
            .iter()
            .enumerate()
            .filter(|(_, k)| !holders || k.table.is_some())
            .min_by_key(|(_, k)| (k.uses, k.last))
            .map(|(at, _)| at)
    }
}

thread_local! {
    static KEYS: RefCell<Keys> = const { RefCell::new(Keys::new()) };
}

/// Forgets this thread's known keys and tables (for the tests).
#[cfg(test)]
pub(super) fn forget_keys() {
    KEYS.with(|keys| *keys.borrow_mut() = Keys::new());
}

/// Whether `pubkey` holds a table on this thread, so its next check uses it (for the
/// tests).
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(super) fn holds_table(pubkey: &[u8; 32]) -> bool {
    KEYS.with(|keys| {
        keys.borrow()
            .known
            .iter()
            .any(|k| k.x == *pubkey && k.table.is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k256::elliptic_curve::ops::Reduce;
    use k256::schnorr::SigningKey;
    use k256::U256;
    use sha2::{Digest, Sha256};

    /// Tables built on this thread so far, and which known keys hold one.
    fn state() -> (u64, Vec<[u8; 32]>) {
        KEYS.with(|keys| {
            let keys = keys.borrow();
            let holders = keys
                .known
                .iter()
                .filter(|k| k.table.is_some())
                .map(|k| k.x)
                .collect();
            (keys.built, holders)
        })
    }

    fn signing_key(seed: u8) -> SigningKey {
        let mut bytes = [7u8; 32];
        bytes[0] = seed;
        bytes[31] = seed.wrapping_mul(31).wrapping_add(1);
        SigningKey::from_bytes(&bytes).expect("a valid secret key")
    }

    fn signed(key: &SigningKey, n: u8) -> ([u8; 32], [u8; 32], [u8; 64]) {
        let id: [u8; 32] = Sha256::digest([n, 1, 2, 3]).into();
        let sig = key.sign_raw(&id, &[n; 32]).expect("signs");
        let x: [u8; 32] = key.verifying_key().to_bytes().into();
        (id, x, sig.to_bytes())
    }

    fn scalar(seed: u64) -> Scalar {
        let bytes: [u8; 32] = Sha256::digest(seed.to_be_bytes()).into();
        <Scalar as Reduce<U256>>::reduce_bytes(&bytes.into())
    }

    #[test]
    fn a_table_multiplies_as_the_point_does() {
        let point = ProjectivePoint::GENERATOR * scalar(99);
        let comb = Comb::new(point);
        let mut edge = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(8u64)];
        edge.push(Scalar::from(0x8888_8888_8888_8888u64));
        edge.push(-Scalar::from(0x7777_7777u64));
        // Every nibble 8 (the recoding's carries ripple through every digit).
        edge.push(<Scalar as Reduce<U256>>::reduce_bytes(&[0x88u8; 32].into()));
        edge.push(<Scalar as Reduce<U256>>::reduce_bytes(&[0xffu8; 32].into()));
        for k in edge.into_iter().chain((0..64).map(scalar)) {
            assert_eq!(comb.mul(&k), point * k, "k = {:?}", k.to_bytes());
        }
    }

    #[test]
    fn the_recoding_sums_back_to_the_scalar() {
        for k in (0..32).map(scalar).chain([Scalar::ZERO, -Scalar::ONE]) {
            let digits = radix16(&k);
            assert!(digits[..64].iter().all(|d| (-8..=7).contains(d)));
            assert!((0..=1).contains(&digits[64]));
            let sixteen = Scalar::from(16u64);
            let sum = digits.iter().rev().fold(Scalar::ZERO, |acc, &d| {
                let d = if d < 0 {
                    -Scalar::from(u64::from(d.unsigned_abs()))
                } else {
                    Scalar::from(d as u64)
                };
                acc * sixteen + d
            });
            assert_eq!(sum, k);
        }
    }

    type Case = ([u8; 32], [u8; 32], [u8; 64]);

    /// 24 signatures by `key` and every way to break each: another id, a flipped bit
    /// of `s` or `r`, `s = 0`, `r ≥ p`.
    fn cases(key: &SigningKey) -> Vec<Case> {
        let mut cases = Vec::new();
        for n in 0..24u8 {
            let (id, x, sig) = signed(key, n);
            cases.push((id, x, sig));
            let mut other_id = id;
            other_id[n as usize % 32] ^= 1 << (n % 8);
            cases.push((other_id, x, sig));
            let mut bad_s = sig;
            bad_s[32 + n as usize % 32] ^= 0x40;
            cases.push((id, x, bad_s));
            let mut bad_r = sig;
            bad_r[n as usize % 32] ^= 0x02;
            cases.push((id, x, bad_r));
            // s + n, s = 0, r = p, r = 0: refused by the encoding.
            let mut zero_s = sig;
            zero_s[32..].fill(0);
            cases.push((id, x, zero_s));
            let mut max_r = sig;
            max_r[..32].fill(0xff);
            cases.push((id, x, max_r));
        }
        cases
    }

    /// What k256's `verify_raw` answers, the failures in [`Failure`]'s order.
    fn reference((id, x, sig): &Case) -> Result<(), Failure> {
        let key = VerifyingKey::from_bytes(x).map_err(|_| Failure::NotAPoint)?;
        let sig = Signature::try_from(&sig[..]).map_err(|_| Failure::BadEncoding)?;
        key.verify_raw(id, &sig).map_err(|_| Failure::DoesNotVerify)
    }

    /// Every way to break a signature, checked with and without a table, answers what
    /// k256's `verify_raw` answers.
    #[test]
    fn both_paths_answer_what_k256_answers() {
        forget_keys();
        let cases = cases(&signing_key(1));
        let valid = cases.iter().filter(|c| reference(c).is_ok()).count();
        assert_eq!(valid, 24, "only the untouched signatures verify");
        for (round, case) in cases.iter().enumerate() {
            assert_eq!(
                verify(&case.0, &case.1, &case.2),
                reference(case),
                "case {round}"
            );
        }
        let (built, holders) = state();
        assert_eq!(built, 2, "the generator's table and the key's, each once");
        assert_eq!(holders, vec![cases[0].1]);
    }

    /// A check that never returned (a trap in wasm) leaves the known keys borrowed:
    /// the checks after it still answer, without them, what k256 answers (they
    /// panicked on the borrow before, so one engine fault in WebKit failed every
    /// later check of the page).
    #[test]
    fn checks_go_on_when_the_known_keys_were_left_borrowed() {
        forget_keys();
        let cases = cases(&signing_key(3));
        let off_curve = (1u8..)
            .map(|n| [n; 32])
            .find(|x| VerifyingKey::from_bytes(x).is_err())
            .expect("some x is not on the curve");
        KEYS.with(|keys| {
            let _cut_short = keys.borrow_mut();
            for (round, case) in cases.iter().enumerate() {
                assert_eq!(
                    verify(&case.0, &case.1, &case.2),
                    reference(case),
                    "case {round}"
                );
            }
            assert_eq!(
                verify(&[0; 32], &off_curve, &[1; 64]),
                Err(Failure::NotAPoint)
            );
        });
        assert_eq!(state(), (0, vec![]), "nothing was learnt meanwhile");
        let (id, x, sig) = cases[0];
        assert_eq!(verify(&id, &x, &sig), Ok(()), "the cache again once free");
        assert_eq!(KEYS.with(|keys| keys.borrow().known.len()), 1);
    }

    #[test]
    fn a_key_gets_its_table_on_its_second_check() {
        forget_keys();
        let key = signing_key(2);
        let (id, x, sig) = signed(&key, 0);
        assert_eq!(verify(&id, &x, &sig), Ok(()));
        assert_eq!(state(), (0, vec![]), "one check builds nothing");
        assert_eq!(verify(&id, &x, &sig), Ok(()));
        assert_eq!(state(), (2, vec![x]));
        for n in 1..10 {
            let (id, _, sig) = signed(&key, n);
            assert_eq!(verify(&id, &x, &sig), Ok(()));
        }
        assert_eq!(state().0, 2, "tables are built once");
    }

    #[test]
    fn rotating_authors_do_not_rebuild_tables() {
        forget_keys();
        let keys: Vec<SigningKey> = (10..10 + TABLES as u8 + 3).map(signing_key).collect();
        for round in 0..6 {
            for key in &keys {
                let (id, x, sig) = signed(key, round);
                assert_eq!(verify(&id, &x, &sig), Ok(()));
            }
        }
        let (built, holders) = state();
        assert_eq!(holders.len(), TABLES);
        assert_eq!(
            built,
            1 + TABLES as u64,
            "the generator's and one per holder"
        );
    }

    #[test]
    fn the_most_used_key_takes_a_table_from_a_less_used_one() {
        forget_keys();
        let keys: Vec<SigningKey> = (20..20 + TABLES as u8).map(signing_key).collect();
        for key in &keys {
            for n in 0..2 {
                let (id, x, sig) = signed(key, n);
                assert_eq!(verify(&id, &x, &sig), Ok(()));
            }
        }
        let newcomer = signing_key(40);
        let newcomer_x: [u8; 32] = newcomer.verifying_key().to_bytes().into();
        for n in 0..3 {
            let (id, x, sig) = signed(&newcomer, n);
            assert_eq!(verify(&id, &x, &sig), Ok(()));
            let holds = state().1.contains(&newcomer_x);
            // Two checks tie with the holders (two each): no table yet; the third
            // takes one.
            assert_eq!(holds, n == 2, "after check {}", n + 1);
        }
        assert_eq!(state().1.len(), TABLES);
    }

    #[test]
    fn many_authors_keep_the_cache_bounded_and_the_user_s_table() {
        forget_keys();
        let user = signing_key(50);
        let user_x: [u8; 32] = user.verifying_key().to_bytes().into();
        for n in 0..5 {
            let (id, x, sig) = signed(&user, n);
            assert_eq!(verify(&id, &x, &sig), Ok(()));
        }
        // 3 × KNOWN_KEYS others, each once.
        for seed in 0..3 * KNOWN_KEYS as u8 {
            let (id, x, sig) = signed(&signing_key(100 + seed), 0);
            assert_eq!(verify(&id, &x, &sig), Ok(()));
        }
        let known = KEYS.with(|keys| keys.borrow().known.len());
        assert_eq!(known, KNOWN_KEYS);
        assert_eq!(state().1, vec![user_x]);
    }

    #[test]
    fn a_pubkey_off_the_curve_is_not_remembered() {
        forget_keys();
        let x = (1u8..)
            .map(|n| {
                let mut x = [0u8; 32];
                x[31] = n;
                x
            })
            .find(|x| VerifyingKey::from_bytes(x).is_err())
            .expect("some small x is not on the curve");
        for _ in 0..3 {
            assert_eq!(verify(&[0; 32], &x, &[1; 64]), Err(Failure::NotAPoint));
        }
        assert!(KEYS.with(|keys| keys.borrow().known.is_empty()));
    }
}
