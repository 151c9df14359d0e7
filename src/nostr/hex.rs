//! Tiny lowercase-hex helpers, so the crate needs no hex dependency. Nostr ids, pubkeys
//! and signatures are lowercase hex; uppercase is refused.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The value of one lowercase hex digit, or `None`.
fn nibble(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

/// True when `s` is exactly `len` lowercase hex characters.
pub(crate) fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| nibble(b).is_some())
}

/// Decodes exactly `N` bytes from `2 * N` lowercase hex characters.
pub(crate) fn decode<const N: usize>(s: &str) -> Option<[u8; N]> {
    let bytes = s.as_bytes();
    if bytes.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

/// Encodes bytes as lowercase hex.
pub(crate) fn encode(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0x0f) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let b = [0x00, 0x7f, 0x80, 0xff, 0x1a];
        let h = encode(&b);
        assert_eq!(h, "007f80ff1a");
        assert_eq!(decode::<5>(&h), Some(b));
        assert_eq!(decode::<5>("007F80ff1a"), None);
        assert_eq!(decode::<5>("007f80ff1"), None);
        assert_eq!(decode::<2>("zz00"), None);
        assert!(is_lower_hex("00ff", 4));
        assert!(!is_lower_hex("00FF", 4));
        assert!(!is_lower_hex("00f", 4));
        // multi-byte UTF-8 must not be mistaken for hex nor panic
        assert!(!is_lower_hex("é0", 3));
        assert_eq!(decode::<1>("é"), None);
    }
}
