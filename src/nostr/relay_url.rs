//! Relay URLs: a small strict parser and normalizer for `ws://` and `wss://` URLs, and
//! de-duplication of a target set by normalized URL. No general URL machinery (the
//! `url` crate is too big for the wasm bundle); anything outside the narrow accepted
//! grammar is refused with a [`RelayUrlError`] that says why.
//!
//! Normalization: surrounding whitespace trimmed; scheme and host lowercased; IPv6
//! literals in their canonical compressed form; the default port (80 for `ws`, 443 for
//! `wss`) dropped; a path of exactly `/` dropped; the rest of the path and the query
//! kept byte for byte.

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};
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

/// Splits `host[:port]` or `[v6][:port]` and returns the normalized host.
fn split_host_port(authority: &str) -> Result<(String, Option<&str>), RelayUrlError> {
    if let Some(after_open) = authority.strip_prefix('[') {
        let close = after_open
            .find(']')
            .ok_or_else(|| host_error(authority, "unclosed `[` in IPv6 literal"))?;
        let literal = &after_open[..close];
        let addr = Ipv6Addr::from_str(literal)
            .map_err(|_| host_error(literal, "not a valid IPv6 address"))?;
        let after = &after_open[close + 1..];
        let port = if after.is_empty() {
            None
        } else if let Some(p) = after.strip_prefix(':') {
            Some(p)
        } else {
            return Err(host_error(authority, "unexpected characters after `]`"));
        };
        return Ok((format!("[{addr}]"), port));
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
    if labels.split('.').any(|l| l.is_empty() || l.len() > 63) {
        return Err(host_error(
            host,
            "each dot-separated label must have 1 to 63 characters",
        ));
    }
    let last = labels.rsplit('.').next().unwrap_or(labels);
    if last.bytes().all(|b| b.is_ascii_digit()) && Ipv4Addr::from_str(labels).is_err() {
        return Err(host_error(host, "not a valid IPv4 address"));
    }
    Ok(host.to_ascii_lowercase())
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
