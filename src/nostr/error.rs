//! Typed errors of the Nostr layer. Every error carries a stable string `code()` for the
//! JavaScript boundary (documented in `docs/NOSTR.md`) and a human message that names
//! the offending field and the reason. Nothing in this module panics.

use thiserror::Error;

/// Why an event was refused: its JSON shape, a field's type or format, its id or its
/// signature. [`EventError::code`] is always `"invalid_event"`; [`EventError::reason`]
/// gives a finer stable sub-code and [`EventError::field`] the field concerned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EventError {
    /// The text is not one valid JSON value as `serde_json` reads it: this includes
    /// trailing data, a lone UTF-16 surrogate escape, a number beyond `f64` (`1e400`)
    /// and nesting deeper than 128.
    #[error("invalid event: not valid JSON: {detail}")]
    NotJson {
        /// What the JSON parser reported.
        detail: String,
    },
    /// The JSON value is not an object.
    #[error("invalid event: expected a JSON object, got {found}")]
    NotObject {
        /// The JSON type that was found instead.
        found: &'static str,
    },
    /// A required field is absent.
    #[error("invalid event: `{field}` is missing")]
    Missing {
        /// The missing field.
        field: &'static str,
    },
    /// A field appears twice in the JSON text (relays might read the other copy).
    #[error("invalid event: `{field}` appears more than once")]
    Duplicate {
        /// The repeated field.
        field: &'static str,
    },
    /// A field has the wrong JSON type.
    #[error("invalid event: `{field}`{at} must be {expected}, got {found}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// Where inside the field (e.g. `[2][1]` for a tag element), or empty.
        at: String,
        /// What the field must be.
        expected: &'static str,
        /// The JSON type that was found.
        found: &'static str,
    },
    /// A field has the right type but a bad value (hex length or case, range, ...).
    #[error("invalid event: `{field}` {reason}")]
    BadValue {
        /// The field.
        field: &'static str,
        /// Why the value is refused.
        reason: String,
    },
    /// The `id` is not the sha256 of the event's NIP-01 serialization.
    #[error("invalid event: `id` does not match the event (computed {computed})")]
    IdMismatch {
        /// The id computed from the event's fields (64 lowercase hex).
        computed: String,
    },
    /// The `sig` is not a valid BIP-340 signature of the `id` by the `pubkey`.
    #[error("invalid event: `sig` {reason}")]
    BadSignature {
        /// Why verification failed.
        reason: &'static str,
    },
}

impl EventError {
    /// The stable error code for JavaScript: always `"invalid_event"`.
    pub fn code(&self) -> &'static str {
        "invalid_event"
    }

    /// A finer, stable sub-code: `not_json`, `not_object`, `missing_field`,
    /// `duplicate_field`, `wrong_type`, `bad_value`, `id_mismatch` or `bad_signature`.
    pub fn reason(&self) -> &'static str {
        match self {
            EventError::NotJson { .. } => "not_json",
            EventError::NotObject { .. } => "not_object",
            EventError::Missing { .. } => "missing_field",
            EventError::Duplicate { .. } => "duplicate_field",
            EventError::WrongType { .. } => "wrong_type",
            EventError::BadValue { .. } => "bad_value",
            EventError::IdMismatch { .. } => "id_mismatch",
            EventError::BadSignature { .. } => "bad_signature",
        }
    }

    /// The event field concerned (`id`, `pubkey`, `created_at`, `kind`, `tags`,
    /// `content`, `sig`), or `None` when the problem is the whole text.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            EventError::NotJson { .. } | EventError::NotObject { .. } => None,
            EventError::Missing { field }
            | EventError::Duplicate { field }
            | EventError::WrongType { field, .. }
            | EventError::BadValue { field, .. } => Some(field),
            EventError::IdMismatch { .. } => Some("id"),
            EventError::BadSignature { .. } => Some("sig"),
        }
    }
}

/// Why a relay URL was refused. [`RelayUrlError::code`] is always `"invalid_relay_url"`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RelayUrlError {
    /// The URL is empty (or only whitespace).
    #[error("invalid relay URL: empty")]
    Empty,
    /// The URL is longer than [`crate::nostr::relay_url::MAX_RELAY_URL_LEN`] bytes.
    #[error("invalid relay URL: longer than {max} bytes ({len})")]
    TooLong {
        /// The length of the (trimmed) input in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The scheme is missing or is not `ws` / `wss`.
    #[error("invalid relay URL: scheme must be ws:// or wss://, got {}", describe_scheme(.scheme))]
    Scheme {
        /// The scheme found (empty when there is no `://`).
        scheme: String,
    },
    /// The URL has a `user:password@` part.
    #[error("invalid relay URL: userinfo (`user@`) is not allowed")]
    Userinfo,
    /// The URL has a `#fragment`.
    #[error("invalid relay URL: a fragment (`#...`) is not allowed")]
    Fragment,
    /// The host is empty.
    #[error("invalid relay URL: missing host")]
    MissingHost,
    /// The host is not a valid DNS name, IPv4 address or bracketed IPv6 literal.
    #[error("invalid relay URL: invalid host `{host}`: {reason}")]
    Host {
        /// The host as given.
        host: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The port is not a number in 1..=65535.
    #[error("invalid relay URL: invalid port `{port}` (must be 1..=65535)")]
    Port {
        /// The port text as given.
        port: String,
    },
    /// The path or query holds a character that is not allowed (whitespace, control
    /// characters, non-ASCII, backslash).
    #[error("invalid relay URL: character {} is not allowed in the path or query", CharLiteral(*.ch))]
    Character {
        /// The offending character.
        ch: char,
    },
}

/// A character for messages: `' '`, `'x'`, `'\\'` for printable ASCII (a backslash
/// escaped), `U+00E9` for anything else, so an invisible or look-alike character is
/// named exactly. Written here rather than with `{:?}`: the release `.wasm` is built with
/// `-Zfmt-debug=none` (scripts/build.sh), under which `Debug` writes nothing.
struct CharLiteral(char);

impl std::fmt::Display for CharLiteral {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            '\\' => f.write_str("'\\\\'"),
            c @ ' '..='~' => write!(f, "'{c}'"),
            c => write!(f, "U+{:04X}", u32::from(c)),
        }
    }
}

fn describe_scheme(scheme: &str) -> String {
    if scheme.is_empty() {
        "none".to_owned()
    } else {
        format!("`{scheme}`")
    }
}

impl RelayUrlError {
    /// The stable error code for JavaScript: always `"invalid_relay_url"`.
    pub fn code(&self) -> &'static str {
        "invalid_relay_url"
    }
}

/// A relay URL in a target list was refused: which one and why.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("target relay #{index}: {error}")]
pub struct TargetsError {
    /// The position of the refused URL in the input list (0-based).
    pub index: usize,
    /// Why it was refused.
    pub error: RelayUrlError,
}

impl TargetsError {
    /// The stable error code for JavaScript: always `"invalid_relay_url"`.
    pub fn code(&self) -> &'static str {
        self.error.code()
    }
}

/// Why a signed NIP-42 AUTH event returned by the app's signer is not acceptable.
/// [`AuthError::code`] is always `"invalid_auth_event"`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuthError {
    /// The signer's output is not a valid, correctly signed event.
    #[error("invalid AUTH event: {0}")]
    Event(#[from] EventError),
    /// The event's kind is not 22242.
    #[error("invalid AUTH event: kind must be 22242, got {kind}")]
    Kind {
        /// The kind found.
        kind: u16,
    },
    /// The `relay` tag is missing or names another relay.
    #[error("invalid AUTH event: `relay` tag missing or not {expected}")]
    Relay {
        /// The relay the event should name.
        expected: String,
    },
    /// The `challenge` tag is missing or differs from the relay's challenge.
    #[error("invalid AUTH event: `challenge` tag missing or not the relay's challenge")]
    Challenge,
}

impl AuthError {
    /// The stable error code: always `"invalid_auth_event"`. Not an `OutboxError` code
    /// (not in `ErrorCode`): the transport reports a refused AUTH event as a
    /// publish's message.
    pub fn code(&self) -> &'static str {
        "invalid_auth_event"
    }
}

#[cfg(test)]
mod tests {
    use super::CharLiteral;

    #[test]
    fn char_literal() {
        for (c, text) in [
            (' ', "' '"),
            ('a', "'a'"),
            ('\\', "'\\\\'"),
            ('\t', "U+0009"),
            ('\u{7f}', "U+007F"),
            ('é', "U+00E9"),
            ('\u{a0}', "U+00A0"),
            ('\u{1f600}', "U+1F600"),
        ] {
            assert_eq!(CharLiteral(c).to_string(), text);
        }
    }
}
