//! Relay URLs: a small strict parser and normalizer for `ws://` and `wss://` URLs, and
//! de-duplication of a target set by normalized URL. No general URL machinery (the
//! `url` crate is too big for the wasm bundle); anything outside the narrow accepted
//! grammar is refused with a [`RelayUrlError`] that says why.
//!
//! Normalization: surrounding whitespace trimmed; scheme and host lowercased; IPv6
//! literals in their canonical compressed form; the default port (80 for `ws`, 443 for
//! `wss`) dropped; a path of exactly `/` dropped; the rest of the path and the query
//! kept byte for byte.
//!
//! IP literals are read by a small parser of its own that accepts exactly what
//! `core::net`'s `Ipv4Addr`/`Ipv6Addr` `FromStr` accept and prints what their
//! `Display` prints (tested against them natively); `core::net`'s generic parser and
//! formatter would cost about 5 KB of wasm.

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::{RelayUrlError, TargetsError};

/// The longest relay URL accepted, in bytes (after trimming whitespace).
pub const MAX_RELAY_URL_LEN: usize = 2048;

/// A parsed, normalized relay URL. Two URLs naming the same relay compare equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelayUrl {
    url: String,
    secure: bool,
    host_start: usize,
    host_end: usize,
    port: Option<u16>,
    tail_start: usize,
}

impl RelayUrl {
    /// Parses and normalizes a relay URL (see the module docs for the rules).
    pub fn parse(input: &str) -> Result<RelayUrl, RelayUrlError> {
        let s = input.trim();
        if s.is_empty() {
            return Err(RelayUrlError::Empty);
        }
        if s.len() > MAX_RELAY_URL_LEN {
            return Err(RelayUrlError::TooLong {
                len: s.len(),
                max: MAX_RELAY_URL_LEN,
            });
        }
        let (scheme, rest) = match s.as_bytes().windows(3).position(|w| w == b"://") {
            Some(i) => (part(s, 0, i), part(s, i + 3, s.len())),
            None => {
                return Err(RelayUrlError::Scheme {
                    scheme: String::new(),
                })
            }
        };
        let secure = if scheme.eq_ignore_ascii_case("wss") {
            true
        } else if scheme.eq_ignore_ascii_case("ws") {
            false
        } else {
            return Err(RelayUrlError::Scheme {
                scheme: scheme.chars().take(32).collect(),
            });
        };
        if find_any(rest, b"#").is_some() {
            return Err(RelayUrlError::Fragment);
        }
        let authority_end = find_any(rest, b"/?").unwrap_or(rest.len());
        let authority = part(rest, 0, authority_end);
        let tail = part(rest, authority_end, rest.len());
        if find_any(authority, b"@").is_some() {
            return Err(RelayUrlError::Userinfo);
        }
        if authority.is_empty() {
            return Err(RelayUrlError::MissingHost);
        }
        let (host, port_text) = split_host_port(authority)?;
        let port = match port_text {
            None => None,
            Some(p) => Some(parse_port(p)?),
        };
        let default_port = if secure { 443 } else { 80 };
        let port = port.filter(|&p| p != default_port);
        if let Some(ch) = tail.chars().find(|&c| !c.is_ascii_graphic() || c == '\\') {
            return Err(RelayUrlError::Character { ch });
        }
        let tail = if tail == "/" {
            ""
        } else if tail.starts_with("/?") {
            // `wss://h/?q` and `wss://h?q` name the same resource.
            part(tail, 1, tail.len())
        } else {
            tail
        };

        let mut url = String::with_capacity(s.len() + 8);
        url.push_str(if secure { "wss://" } else { "ws://" });
        let host_start = url.len();
        url.push_str(&host);
        let host_end = url.len();
        if let Some(p) = port {
            url.push(':');
            url.push_str(&p.to_string());
        }
        let tail_start = url.len();
        url.push_str(tail);
        Ok(RelayUrl {
            url,
            secure,
            host_start,
            host_end,
            port,
            tail_start,
        })
    }

    /// The normalized URL.
    pub fn as_str(&self) -> &str {
        &self.url
    }

    /// True for `wss://`.
    pub fn is_secure(&self) -> bool {
        self.secure
    }

    /// The normalized host: a lowercase DNS name, an IPv4 address, or a bracketed
    /// IPv6 literal such as `[::1]`.
    pub fn host(&self) -> &str {
        &self.url[self.host_start..self.host_end]
    }

    /// The port to connect to (the scheme's default when the URL names none).
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(if self.secure { 443 } else { 80 })
    }

    /// The path and query as given (empty for the root).
    pub fn path_and_query(&self) -> &str {
        &self.url[self.tail_start..]
    }
}

fn host_error(host: &str, reason: &'static str) -> RelayUrlError {
    RelayUrlError::Host {
        host: host.chars().take(256).collect(),
        reason,
    }
}

/// The byte position of the first byte of `s` in `set` (ASCII bytes, so a char
/// boundary). Byte searches instead of `str` patterns: no string searcher in the .wasm.
fn find_any(s: &str, set: &[u8]) -> Option<usize> {
    s.bytes().position(|b| set.contains(&b))
}

/// `s[start..end]` for positions that are char boundaries (the ends of `s`, or next
/// to an ASCII byte found by [`find_any`]), without a panicking path in the .wasm.
fn part(s: &str, start: usize, end: usize) -> &str {
    s.get(start..end).unwrap_or_default()
}

/// Splits `host[:port]` or `[v6][:port]` and returns the normalized host.
fn split_host_port(authority: &str) -> Result<(String, Option<&str>), RelayUrlError> {
    if let Some(after_open) = authority.strip_prefix('[') {
        let close = find_any(after_open, b"]")
            .ok_or_else(|| host_error(authority, "unclosed `[` in IPv6 literal"))?;
        let literal = part(after_open, 0, close);
        let addr =
            parse_ipv6(literal).ok_or_else(|| host_error(literal, "not a valid IPv6 address"))?;
        let after = part(after_open, close + 1, after_open.len());
        let port = if after.is_empty() {
            None
        } else if let Some(p) = after.strip_prefix(':') {
            Some(p)
        } else {
            return Err(host_error(authority, "unexpected characters after `]`"));
        };
        return Ok((format_ipv6(&addr), port));
    }
    let (host, port) = match find_any(authority, b":") {
        Some(i) => (
            part(authority, 0, i),
            Some(part(authority, i + 1, authority.len())),
        ),
        None => (authority, None),
    };
    if port.is_some_and(|p| find_any(p, b":").is_some()) {
        let ipv6_like = authority
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
        if ipv6_like {
            return Err(host_error(
                authority,
                "IPv6 addresses must be written in brackets",
            ));
        }
    }
    Ok((normalize_reg_host(host)?, port))
}

/// A DNS name or dotted IPv4 address, lowercased.
fn normalize_reg_host(host: &str) -> Result<String, RelayUrlError> {
    if host.is_empty() {
        return Err(RelayUrlError::MissingHost);
    }
    if let Some(c) = host
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'))
    {
        return Err(host_error(
            host,
            if c.is_ascii() {
                "only letters, digits, `-`, `_` and `.` are allowed"
            } else {
                "non-ASCII host names must be given in punycode (xn--)"
            },
        ));
    }
    if host.len() > 253 {
        return Err(host_error(host, "longer than 253 characters"));
    }
    let labels = host.strip_suffix('.').unwrap_or(host);
    if labels
        .as_bytes()
        .split(|&b| b == b'.')
        .any(|l| l.is_empty() || l.len() > 63)
    {
        return Err(host_error(
            host,
            "each dot-separated label must have 1 to 63 characters",
        ));
    }
    let last = labels.as_bytes().rsplit(|&b| b == b'.').next();
    if last.is_some_and(|l| l.iter().all(u8::is_ascii_digit)) && !is_ipv4(labels) {
        return Err(host_error(host, "not a valid IPv4 address"));
    }
    Ok(host.to_ascii_lowercase())
}

/// A cursor over the bytes of an IP literal. Every reader is atomic: on failure it
/// leaves the position where it was (as `core::net`'s parser does).
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Cursor<'a> {
        Cursor {
            bytes: s.as_bytes(),
            pos: 0,
        }
    }

    fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.bytes.get(self.pos) == Some(&c);
        self.pos += usize::from(hit);
        hit
    }

    /// Runs `f`, first reading `sep` unless this is item 0; rewinds on failure.
    fn separated<T>(
        &mut self,
        sep: u8,
        index: usize,
        f: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<T> {
        let start = self.pos;
        let out = if index == 0 || self.eat(sep) {
            f(self)
        } else {
            None
        };
        if out.is_none() {
            self.pos = start;
        }
        out
    }

    /// A number of 1 to `max_digits` digits in `radix`, at most `max`; with
    /// `zero_prefix` false, more than one digit must not start with `0`.
    fn number(
        &mut self,
        radix: u32,
        max_digits: usize,
        max: u32,
        zero_prefix: bool,
    ) -> Option<u32> {
        let start = self.pos;
        let mut value = 0u32;
        let mut digits = 0;
        while let Some(d) = self
            .bytes
            .get(self.pos)
            .and_then(|&b| char::from(b).to_digit(radix))
        {
            value = value * radix + d;
            digits += 1;
            self.pos += 1;
            if digits > max_digits {
                break;
            }
        }
        let ok = digits >= 1
            && digits <= max_digits
            && value <= max
            && (zero_prefix || digits == 1 || self.bytes[start] != b'0');
        if !ok {
            self.pos = start;
        }
        ok.then_some(value)
    }

    /// A dotted-decimal IPv4 address (no leading zeros, each octet at most 255).
    fn ipv4(&mut self) -> Option<[u8; 4]> {
        let start = self.pos;
        let mut octets = [0u8; 4];
        for (i, slot) in octets.iter_mut().enumerate() {
            match self.separated(b'.', i, |p| p.number(10, 3, 255, false)) {
                Some(n) => *slot = n as u8,
                None => {
                    self.pos = start;
                    return None;
                }
            }
        }
        Some(octets)
    }

    /// Colon-separated groups into `groups`, possibly ending with an embedded IPv4
    /// address (two groups): how many groups were read and whether IPv4 ended them.
    fn ipv6_groups(&mut self, groups: &mut [u16]) -> (usize, bool) {
        let limit = groups.len();
        for i in 0..limit {
            if i + 1 < limit {
                if let Some([a, b, c, d]) = self.separated(b':', i, Cursor::ipv4) {
                    groups[i] = u16::from_be_bytes([a, b]);
                    groups[i + 1] = u16::from_be_bytes([c, d]);
                    return (i + 2, true);
                }
            }
            match self.separated(b':', i, |p| p.number(16, 4, 0xffff, true)) {
                Some(g) => groups[i] = g as u16,
                None => return (i, false),
            }
        }
        (limit, false)
    }

    /// An IPv6 address: eight groups, or a head and a tail around one `::`.
    fn ipv6(&mut self) -> Option<[u16; 8]> {
        let mut head = [0u16; 8];
        let (head_len, head_v4) = self.ipv6_groups(&mut head);
        if head_len == 8 {
            return Some(head);
        }
        // An embedded IPv4 address is allowed only at the very end.
        if head_v4 || !(self.eat(b':') && self.eat(b':')) {
            return None;
        }
        // `::` stands for at least one zero group.
        let mut tail = [0u16; 7];
        let (tail_len, _) = self.ipv6_groups(&mut tail[..7 - head_len]);
        head[8 - tail_len..].copy_from_slice(&tail[..tail_len]);
        Some(head)
    }
}

/// Whether `s` is an IPv4 address as `core::net::Ipv4Addr::from_str` reads one.
fn is_ipv4(s: &str) -> bool {
    let mut p = Cursor::new(s);
    s.len() <= 15 && p.ipv4().is_some() && p.at_end()
}

/// The groups of an IPv6 address as `core::net::Ipv6Addr::from_str` reads one.
fn parse_ipv6(s: &str) -> Option<[u16; 8]> {
    let mut p = Cursor::new(s);
    p.ipv6().filter(|_| p.at_end())
}

fn push_hex(out: &mut String, n: u16) {
    let mut started = false;
    for shift in [12, 8, 4, 0] {
        let d = (n >> shift) & 0xf;
        started |= d != 0 || shift == 0;
        if started {
            out.push(char::from_digit(u32::from(d), 16).unwrap_or('0'));
        }
    }
}

fn push_groups(out: &mut String, groups: &[u16]) {
    for (i, &g) in groups.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        push_hex(out, g);
    }
}

/// An IPv6 address in brackets, as `core::net::Ipv6Addr`'s `Display` prints it: an
/// IPv4-mapped address as `::ffff:a.b.c.d`; otherwise lowercase hex groups with the
/// first longest run of two or more zero groups written `::`.
fn format_ipv6(groups: &[u16; 8]) -> String {
    let mut out = String::with_capacity(41);
    out.push('[');
    if groups[..6] == [0, 0, 0, 0, 0, 0xffff] {
        out.push_str("::ffff:");
        let [a, b] = groups[6].to_be_bytes();
        let [c, d] = groups[7].to_be_bytes();
        for (i, octet) in [a, b, c, d].into_iter().enumerate() {
            if i > 0 {
                out.push('.');
            }
            push_decimal(&mut out, octet);
        }
    } else {
        let (mut best_start, mut best_len, mut run_start, mut run_len) = (0, 0, 0, 0);
        for (i, &g) in groups.iter().enumerate() {
            if g == 0 {
                if run_len == 0 {
                    run_start = i;
                }
                run_len += 1;
                if run_len > best_len {
                    (best_start, best_len) = (run_start, run_len);
                }
            } else {
                run_len = 0;
            }
        }
        if best_len > 1 {
            push_groups(&mut out, &groups[..best_start]);
            out.push_str("::");
            push_groups(&mut out, &groups[best_start + best_len..]);
        } else {
            push_groups(&mut out, groups);
        }
    }
    out.push(']');
    out
}

fn push_decimal(out: &mut String, n: u8) {
    if n >= 100 {
        out.push(char::from(b'0' + n / 100));
    }
    if n >= 10 {
        out.push(char::from(b'0' + n / 10 % 10));
    }
    out.push(char::from(b'0' + n % 10));
}

fn parse_port(p: &str) -> Result<u16, RelayUrlError> {
    let bad = || RelayUrlError::Port {
        port: p.chars().take(16).collect(),
    };
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match p.parse::<u16>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(bad()),
    }
}

/// Parses every target URL and drops repeats of the same normalized URL, keeping the
/// first-seen order. An empty list gives an empty set (whether that is allowed is the
/// caller's policy). The first invalid URL is reported with its position.
pub fn normalize_targets<S: AsRef<str>>(targets: &[S]) -> Result<Vec<RelayUrl>, TargetsError> {
    let mut out: Vec<RelayUrl> = Vec::with_capacity(targets.len());
    for (index, t) in targets.iter().enumerate() {
        let url = RelayUrl::parse(t.as_ref()).map_err(|error| TargetsError { index, error })?;
        if !out.contains(&url) {
            out.push(url);
        }
    }
    Ok(out)
}

impl fmt::Display for RelayUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

impl AsRef<str> for RelayUrl {
    fn as_ref(&self) -> &str {
        &self.url
    }
}

impl FromStr for RelayUrl {
    type Err = RelayUrlError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RelayUrl::parse(s)
    }
}

impl Serialize for RelayUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.url)
    }
}

impl<'de> Deserialize<'de> for RelayUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        RelayUrl::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The IP literal parser and formatter against `core::net`, whose behaviour they
/// must match exactly (native only: the point is not to link `core::net` into wasm).
#[cfg(all(test, not(target_arch = "wasm32")))]
mod ip_tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};
    use proptest::prelude::*;

    fn check(s: &str) {
        let ours = parse_ipv6(s);
        let std = Ipv6Addr::from_str(s).ok();
        assert_eq!(ours, std.map(|a| a.segments()), "parse {s:?}");
        if let (Some(ours), Some(std)) = (ours, std) {
            assert_eq!(format_ipv6(&ours), format!("[{std}]"), "display {s:?}");
        }
        assert_eq!(is_ipv4(s), Ipv4Addr::from_str(s).is_ok(), "ipv4 {s:?}");
    }

    #[test]
    fn edge_cases_match_core_net() {
        for s in [
            "",
            ":",
            "::",
            ":::",
            "::1",
            "1::",
            "1::1",
            "::1:",
            ":1::",
            "1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7:8::",
            "::1:2:3:4:5:6:7:8",
            "1::2::3",
            "0:0:0:0:0:0:0:1",
            "0:0:1:0:0:0:1:0",
            "1:0:0:1:0:0:1:1",
            "0:0:1:0:0:1:0:0",
            "1:0:1:0:1:0:1:0",
            "00000::1",
            "0000::1",
            "fffff::",
            "FFFF::abcd",
            "::ffff:1.2.3.4",
            "::ffff:01.2.3.4",
            "::ffff:1.2.3.256",
            "::ffff:1.2.3.255",
            "::1.2.3.4",
            "1.2.3.4::",
            "1:2:3:4:5:6:1.2.3.4",
            "1:2:3:4:5:6:7:1.2.3.4",
            "1:2:3:4:5:1.2.3.4",
            "1:2:3:4:5::1.2.3.4",
            "::1.2.3.4:5",
            "::1.2.3",
            "::1.2.3.4.5",
            "::0.0.0.0",
            "::ffff:0.0.0.0",
            "::ffff:0:0",
            "::fffe:1.2.3.4",
            "0:0:0:0:0:ffff:102:304",
            "1.2.3.4",
            "01.2.3.4",
            "0.0.0.0",
            "255.255.255.255",
            "256.1.1.1",
            "1.2.3",
            "1.2.3.4.",
            "1..2.3",
            "001.2.3.4",
            "1.2.3.4 ",
            " ::1",
            "::1%1",
            "fe80::1",
            "2001:db8::a",
            "2001:DB8:0:0:1:0:0:1",
            "a:b:c:d:e:f:0:0",
            "0:0:a:b:c:d:e:f",
            "::g",
            "1.1.1.1111",
            "1111.1.1.1",
            "::ffff:1.2.3.4x",
            "12345::",
            "::12345",
            "1:2:3:4:5:6:7:8:",
        ] {
            check(s);
        }
    }

    #[test]
    fn all_group_patterns_format_like_core_net() {
        // Every pattern of zero / non-zero groups, with non-zero values of 1 to 4 digits.
        for mask in 0u32..256 {
            let groups: [u16; 8] = core::array::from_fn(|i| {
                if mask >> i & 1 == 1 {
                    [0x1, 0xab, 0xf00, 0xffff][i % 4]
                } else {
                    0
                }
            });
            let std = Ipv6Addr::from(groups);
            assert_eq!(format_ipv6(&groups), format!("[{std}]"));
            check(&std.to_string());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3_000))]
        #[test]
        fn random_literals_match_core_net(s in "[0-9a-fA-F:.]{0,40}|[0-9:.fF]{0,20}|[0-9.]{0,16}") {
            check(&s);
        }

        #[test]
        fn structured_literals_match_core_net(
            parts in proptest::collection::vec("[0-9a-f]{0,5}|[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}|", 0..10),
        ) {
            check(&parts.join(":"));
        }
    }
}

/// The byte-level parser against the `str`-pattern parser it replaced (kept here as
/// the oracle): the same URL or the same error for every input.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod parse_oracle {
    use super::*;
    use proptest::prelude::*;

    fn old_parse(input: &str) -> Result<RelayUrl, RelayUrlError> {
        let s = input.trim();
        if s.is_empty() {
            return Err(RelayUrlError::Empty);
        }
        if s.len() > MAX_RELAY_URL_LEN {
            return Err(RelayUrlError::TooLong {
                len: s.len(),
                max: MAX_RELAY_URL_LEN,
            });
        }
        let (scheme, rest) = match s.find("://") {
            Some(i) => (&s[..i], &s[i + 3..]),
            None => {
                return Err(RelayUrlError::Scheme {
                    scheme: String::new(),
                })
            }
        };
        let secure = if scheme.eq_ignore_ascii_case("wss") {
            true
        } else if scheme.eq_ignore_ascii_case("ws") {
            false
        } else {
            return Err(RelayUrlError::Scheme {
                scheme: scheme.chars().take(32).collect(),
            });
        };
        if rest.contains('#') {
            return Err(RelayUrlError::Fragment);
        }
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        if authority.contains('@') {
            return Err(RelayUrlError::Userinfo);
        }
        if authority.is_empty() {
            return Err(RelayUrlError::MissingHost);
        }
        let (host, port_text) = old_split_host_port(authority)?;
        let port = match port_text {
            None => None,
            Some(p) => Some(parse_port(p)?),
        };
        let default_port = if secure { 443 } else { 80 };
        let port = port.filter(|&p| p != default_port);
        if let Some(ch) = tail.chars().find(|&c| !c.is_ascii_graphic() || c == '\\') {
            return Err(RelayUrlError::Character { ch });
        }
        let tail = if tail == "/" {
            ""
        } else if tail.starts_with("/?") {
            // `wss://h/?q` and `wss://h?q` name the same resource.
            &tail[1..]
        } else {
            tail
        };

        let mut url = String::with_capacity(s.len() + 8);
        url.push_str(if secure { "wss://" } else { "ws://" });
        let host_start = url.len();
        url.push_str(&host);
        let host_end = url.len();
        if let Some(p) = port {
            url.push(':');
            url.push_str(&p.to_string());
        }
        let tail_start = url.len();
        url.push_str(tail);
        Ok(RelayUrl {
            url,
            secure,
            host_start,
            host_end,
            port,
            tail_start,
        })
    }

    /// Splits `host[:port]` or `[v6][:port]` and returns the normalized host.
    fn old_split_host_port(authority: &str) -> Result<(String, Option<&str>), RelayUrlError> {
        if let Some(after_open) = authority.strip_prefix('[') {
            let close = after_open
                .find(']')
                .ok_or_else(|| host_error(authority, "unclosed `[` in IPv6 literal"))?;
            let literal = &after_open[..close];
            let addr = parse_ipv6(literal)
                .ok_or_else(|| host_error(literal, "not a valid IPv6 address"))?;
            let after = &after_open[close + 1..];
            let port = if after.is_empty() {
                None
            } else if let Some(p) = after.strip_prefix(':') {
                Some(p)
            } else {
                return Err(host_error(authority, "unexpected characters after `]`"));
            };
            return Ok((format_ipv6(&addr), port));
        }
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if port.is_some_and(|p| p.contains(':')) {
            let ipv6_like = authority
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
            if ipv6_like {
                return Err(host_error(
                    authority,
                    "IPv6 addresses must be written in brackets",
                ));
            }
        }
        Ok((old_normalize_reg_host(host)?, port))
    }

    /// A DNS name or dotted IPv4 address, lowercased.
    fn old_normalize_reg_host(host: &str) -> Result<String, RelayUrlError> {
        if host.is_empty() {
            return Err(RelayUrlError::MissingHost);
        }
        if let Some(c) = host
            .chars()
            .find(|&c| !(c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'))
        {
            return Err(host_error(
                host,
                if c.is_ascii() {
                    "only letters, digits, `-`, `_` and `.` are allowed"
                } else {
                    "non-ASCII host names must be given in punycode (xn--)"
                },
            ));
        }
        if host.len() > 253 {
            return Err(host_error(host, "longer than 253 characters"));
        }
        let labels = host.strip_suffix('.').unwrap_or(host);
        if labels.split('.').any(|l| l.is_empty() || l.len() > 63) {
            return Err(host_error(
                host,
                "each dot-separated label must have 1 to 63 characters",
            ));
        }
        let last = labels.rsplit('.').next().unwrap_or(labels);
        if last.bytes().all(|b| b.is_ascii_digit()) && !is_ipv4(labels) {
            return Err(host_error(host, "not a valid IPv4 address"));
        }
        Ok(host.to_ascii_lowercase())
    }

    fn check(s: &str) {
        assert_eq!(RelayUrl::parse(s), old_parse(s), "{s:?}");
    }

    #[test]
    fn edge_cases_match_the_old_parser() {
        for s in [
            "",
            " ",
            "wss://",
            "wss:/",
            "://h",
            "ws://h",
            "WSS://H.example:443/",
            "wss://h:443",
            "ws://h:80/",
            "ws://h:0",
            "ws://h:65536",
            "ws://h:+1",
            "ws://h:",
            "wss://h/?q",
            "wss://h?q",
            "wss://h/p?q#f",
            "wss://u@h",
            "wss://h/@",
            "wss://[::1]",
            "wss://[::1]:7",
            "wss://[::1]x",
            "wss://[::1",
            "wss://::1",
            "wss://1:2:3",
            "wss://a:b:c",
            "wss://h/ p",
            "wss://h/\\",
            "wss://h/é",
            "wss://é.example",
            "wss://a..b",
            "wss://a.b.",
            "wss://.a",
            "wss://1.2.3.4",
            "wss://1.2.3",
            "wss://1.2.3.04",
            "wss://a.1",
            "wss://a.b1",
            "wss://xn--e1a.example",
            "wss://a_b.example",
            "wss://h:1://x",
            "http://h",
            "wss://a:b@c",
            "wss://[v6]:1/x",
            "wss://[::ffff:1.2.3.4]",
            "ws://h/?",
            "wss://h//",
            "wss://h/p/",
            " wss://h ",
            "ws s://h",
            "ws://h\u{7f}",
        ] {
            check(s);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5_000))]
        #[test]
        fn random_urls_match_the_old_parser(
            scheme in "wss?|WS|wSs|http|",
            sep in "://|:/|//|",
            authority in "[a-zA-Z0-9.:\\[\\]@_é-]{0,24}",
            tail in "[/?#a-z0-9 @:\\\\é\\[\\]]{0,12}",
        ) {
            check(&format!("{scheme}{sep}{authority}{tail}"));
        }

        #[test]
        fn arbitrary_strings_match_the_old_parser(s in any::<String>()) {
            check(&s);
            check(&format!("wss://{s}"));
        }
    }
}
