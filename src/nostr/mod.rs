//! Everything the outbox must know about Nostr: NIP-01 events (parse, id, signature),
//! relay URLs, relay messages, NIP-42 AUTH and NIP-40 expiration. Pure: no I/O.
