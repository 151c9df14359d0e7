//! Randomness from the runtime's cryptographic source (`crypto.getRandomValues`,
//! through getrandom), never `Math.random` or a sequence of our own.

/// A uniformly random `u32` from the runtime's cryptographic source
/// (`crypto.getRandomValues`); an error where there is none. Never `Math.random`.
pub(crate) fn random_u32() -> Result<u32, getrandom::Error> {
    getrandom::u32()
}

/// Random words for one flush run's lease ids and retry jitter, drawn from the
/// cryptographic source 64 at a time: one `crypto.getRandomValues` call per word (one
/// per completion, when each drew its own jitter) was 58 ms of the 4.5 s the page's thread worked in a profiled flush
/// of 5 000 (`bench.mjs --profile=flush`). There is no stand-in source: once a refill
/// fails the pool says so ([`RandomWords::ready`]) and the run claims nothing more.
pub(crate) struct RandomWords {
    words: [u32; 64],
    used: usize,
    failed: Option<getrandom::Error>,
}

impl RandomWords {
    /// An empty pool (the first [`RandomWords::ready`] or word fills it).
    pub(crate) fn new() -> RandomWords {
        RandomWords {
            words: [0; 64],
            used: 64,
            failed: None,
        }
    }

    /// Makes sure `n` (at most 64) more words are at hand, refilling the pool when
    /// fewer are left; the source's error, for good, once a refill failed (`ready(0)`
    /// tells whether one did).
    pub(crate) fn ready(&mut self, n: usize) -> Result<(), getrandom::Error> {
        if self.failed.is_none() && self.words.len() - self.used < n {
            let mut bytes = [0u8; 256];
            match getrandom::fill(&mut bytes) {
                Ok(()) => {
                    for (word, b) in self.words.iter_mut().zip(bytes.chunks_exact(4)) {
                        *word = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    }
                    self.used = 0;
                }
                Err(e) => self.failed = Some(e),
            }
        }
        self.failed.map_or(Ok(()), Err)
    }

    /// The next word. Once a refill failed and the pool is spent, the middle of the
    /// range: only the retry jitter of attempts already under way is drawn then, as a
    /// caller draws a lease id's words only after [`RandomWords::ready`] said yes, so a
    /// lease id is only ever made of fresh random words.
    pub(crate) fn next_u32(&mut self) -> u32 {
        if self.ready(1).is_err() {
            return u32::MAX / 2;
        }
        self.used += 1;
        self.words[self.used - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::RandomWords;
    use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

    wasm_bindgen_test_configure!(run_in_browser);

    #[wasm_bindgen_test]
    fn random_words_refill_after_each_draw_of_64() {
        let mut words = RandomWords::new();
        let drawn: Vec<u32> = (0..200).map(|_| words.next_u32()).collect();
        let mut distinct = drawn.clone();
        distinct.sort_unstable();
        distinct.dedup();
        // 200 uniform words collide with probability about 5 in a million.
        assert!(distinct.len() >= 199, "{} distinct of 200", distinct.len());
        assert_ne!(drawn[..64], drawn[64..128], "the second fill is fresh");
    }
}
