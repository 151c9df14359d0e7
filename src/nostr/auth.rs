//! NIP-42 authentication: the unsigned kind-22242 event the app's signer must sign in
//! answer to a relay's `["AUTH", <challenge>]`, and the check of what the signer
//! returns. The outbox holds no keys: signing is always the app's.

use super::error::AuthError;
use super::event::Event;
use super::relay_url::RelayUrl;
use serde_json::{json, Value};

/// The NIP-42 client authentication event kind.
pub const AUTH_KIND: u16 = 22242;

/// The unsigned AUTH event for `relay` and `challenge`, created at `created_at` (unix
/// seconds, from the caller's clock): `{"kind":22242,"created_at":..,"tags":[["relay",
/// <normalized url>],["challenge",<challenge>]],"content":""}`. It has no `pubkey`,
/// `id` or `sig`: the app's signer (e.g. NIP-07 `signEvent`) adds them.
pub fn auth_template(relay: &RelayUrl, challenge: &str, created_at: u64) -> Value {
    json!({
        "kind": AUTH_KIND,
        "created_at": created_at,
        "tags": [["relay", relay.as_str()], ["challenge", challenge]],
        "content": "",
    })
}

/// Checks a signed AUTH event returned by the app's signer: kind 22242, a `relay` tag
/// naming `relay` (compared after normalization), a `challenge` tag equal to
/// `challenge`, a correct id and a valid signature. Send it with
/// [`crate::nostr::auth_message`]`(event.raw())`.
pub fn check_auth_event(event: &Event, relay: &RelayUrl, challenge: &str) -> Result<(), AuthError> {
    if event.kind() != AUTH_KIND {
        return Err(AuthError::Kind { kind: event.kind() });
    }
    let names_relay = event
        .tag_value("relay")
        .and_then(|r| RelayUrl::parse(r).ok())
        .is_some_and(|r| &r == relay);
    if !names_relay {
        return Err(AuthError::Relay {
            expected: relay.as_str().to_owned(),
        });
    }
    if event.tag_value("challenge") != Some(challenge) {
        return Err(AuthError::Challenge);
    }
    event.verify()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_is_the_nip42_shape() {
        let relay = RelayUrl::parse("wss://relay.example").unwrap();
        let t = auth_template(&relay, "ch\"al", 1_700_000_000);
        let want = serde_json::json!({
            "kind": 22242,
            "created_at": 1_700_000_000u64,
            "tags": [["relay", relay.as_str()], ["challenge", "ch\"al"]],
            "content": "",
        });
        assert_eq!(t, want);
    }
}
