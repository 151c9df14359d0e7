//! The lists of the JavaScript API that are written in more than one place stay equal:
//! the error codes ([`ErrorCode`], the TypeScript union `OutboxErrorCode` and the codes
//! table of docs/API.md; the codes the lower layers' errors write are each in it) and the
//! keys of each options object (the shape's keys and the keys read in `src/js`, the
//! known-keys lists, the TypeScript interface and, for `Outbox.open`, the options table
//! of docs/API.md). Read from the source text: the `js` layer is built for wasm32 only,
//! and one table of keys in the .wasm would grow it.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeSet;

use nostr_outbox::core::{ErrorCode, Stage};
use nostr_outbox::nostr::{Event, RelayUrl};
use nostr_outbox::store::StoreError;

fn source(path: &str) -> String {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text of `text` from the line holding `start` to the first line after it that
/// starts (after indentation) with `end`, that line excluded.
fn block<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("`{start}` not found"));
    let from = text[..from].rfind('\n').map_or(0, |i| i + 1);
    let mut at = from;
    for (n, line) in text[from..].split_inclusive('\n').enumerate() {
        if n > 0 && line.trim_start().starts_with(end) {
            return &text[from..at];
        }
        at += line.len();
    }
    panic!("no `{end}` after `{start}`")
}

/// The strings quoted with `quote` in `text`, in order.
fn quoted(text: &str, quote: char) -> Vec<String> {
    text.split(quote)
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The strings quoted with `"` from `start` to the next `;` in `text`: a TypeScript
/// union (`export type X = "a" | "b";`) or a JavaScript list (`export const X = […];`).
fn listed(text: &str, start: &str) -> Vec<String> {
    let list = &text[text
        .find(start)
        .unwrap_or_else(|| panic!("`{start}` not found"))..];
    quoted(
        &list[..list
            .find(';')
            .unwrap_or_else(|| panic!("no `;` after `{start}`"))],
        '"',
    )
}

/// The elements of a `const NAME: [&str; N] = [ … ];` list.
fn const_list(text: &str, name: &str) -> Vec<String> {
    let start = format!("const {name}: [&str;");
    let list = &text[text
        .find(&start)
        .unwrap_or_else(|| panic!("`{start}` not found"))..];
    let list = &list[list.find("= [").expect("a list") + 3..];
    quoted(&list[..list.find("];").expect("the list's end")], '"')
}

/// A `shape!` struct's fields and keys (`field: Type = "key",`), in order.
fn shape(text: &str, name: &str) -> Vec<(String, String)> {
    block(text, &format!("    {name} {{"), "}")
        .lines()
        .skip(1)
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| {
            let field = l.trim().split(':').next().expect("a field").to_string();
            let key = quoted(l, '"')
                .pop()
                .unwrap_or_else(|| panic!("no key: {l}"));
            (field, key)
        })
        .collect()
}

fn keys(shape: &[(String, String)]) -> Vec<String> {
    shape.iter().map(|(_, k)| k.clone()).collect()
}

/// The keys of a TypeScript interface in src/js/types.rs (its own, not inherited).
fn ts_interface(types: &str, name: &str) -> Vec<String> {
    block(types, &format!("export interface {name} "), "}")
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| {
            let l = l.trim();
            let key = l.split(['?', ':']).next()?;
            (!key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric()) && l.contains(':'))
                .then(|| key.to_string())
        })
        .collect()
}

/// The backquoted words of the first column of the markdown table after `heading`.
fn docs_table(docs: &str, heading: &str) -> Vec<String> {
    let section = &docs[docs
        .find(heading)
        .unwrap_or_else(|| panic!("`{heading}` not found"))..];
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .flat_map(|l| quoted(l.split('|').nth(1).expect("a first column"), '`'))
        .collect()
}

fn set(list: &[String], what: &str) -> BTreeSet<String> {
    let set: BTreeSet<String> = list.iter().cloned().collect();
    assert_eq!(set.len(), list.len(), "{what} names a key twice: {list:?}");
    set
}

/// Every list equals the first (as sets, no repeats).
fn same(what: &str, lists: &[(&str, Vec<String>)]) {
    let (first, want) = &lists[0];
    let want = set(want, first);
    for (name, list) in &lists[1..] {
        let got = set(list, name);
        assert_eq!(
            got,
            want,
            "{what}: {name} differs from {first}: missing {:?}, extra {:?}",
            want.difference(&got).collect::<Vec<_>>(),
            got.difference(&want).collect::<Vec<_>>()
        );
    }
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.push(c.to_ascii_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// Every `("key", o.field)` read in `text` reads the field the shape gives that key,
/// and each field is named after its key.
fn reads_match_shape(text: &str, shape: &[(String, String)], what: &str) {
    for (field, key) in shape {
        assert_eq!(&camel(field), key, "{what}: field `{field}` reads `{key}`");
    }
    let mut reads = 0;
    for (i, _) in text.match_indices("\", o.") {
        let key = &text[text[..i].rfind('"').expect("a key") + 1..i];
        let field: String = text[i + 5..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if let Some((_, k)) = shape.iter().find(|(f, _)| *f == field) {
            assert_eq!(k, key, "{what}: `{key}` read from field `{field}`");
            reads += 1;
        }
    }
    assert!(reads > 0, "{what}: no read found");
}

#[test]
fn error_codes_are_one_list() {
    let ours: Vec<String> = ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    let types = source("src/js/types.rs");
    let docs = source("docs/API.md");
    same(
        "error codes",
        &[
            ("ErrorCode::ALL", ours.clone()),
            (
                "OutboxErrorCode (src/js/types.rs)",
                listed(&types, "export type OutboxErrorCode ="),
            ),
            (
                "the codes table of docs/API.md",
                docs_table(&docs, "\n## Errors"),
            ),
        ],
    );
    // The state machine and the WebSocket settings' check (wasm only) write their codes
    // as strings: each is one of the list.
    for (path, ty, count) in [
        ("src/core/error.rs", "CoreError", 15),
        ("src/transport/websocket.rs", "WsConfigError", 1),
    ] {
        let text = source(path);
        let text = &text[text
            .find(&format!("impl {ty} {{"))
            .unwrap_or_else(|| panic!("impl {ty}"))..];
        let codes = quoted(block(text, "pub fn code(&self)", "}"), '"');
        assert_eq!(codes.len(), count, "{ty}::code: {codes:?}");
        for code in &codes {
            assert!(ours.contains(code), "{ty}::code {code} is not in ErrorCode");
        }
    }
    // So do the nostr layer's errors (src/nostr/error.rs)…
    let event = Event::parse_json("not json").expect_err("not an event");
    let url = RelayUrl::parse("https://x").expect_err("not a relay URL");
    for code in [event.code(), url.code()] {
        assert!(ours.iter().any(|c| c == code), "nostr error code {code}");
    }
    // … and the store (src/store/mod.rs).
    for e in [
        StoreError::QuotaExceeded(String::new()),
        StoreError::Blocked(String::new()),
        StoreError::VersionTooNew {
            found: 9,
            supported: 1,
        },
        StoreError::Corrupt {
            id: String::new(),
            message: String::new(),
        },
        StoreError::Closed,
        StoreError::Backend(String::new()),
    ] {
        assert!(ours.iter().any(|c| c == e.code()), "{e:?}: {}", e.code());
    }
}

/// The stages as the JavaScript entries list them (js/stages.js: `STAGES` in
/// `Stage::ALL`'s order, `TERMINAL` the stages of `Stage::is_terminal`) and as the
/// TypeScript union `Stage` names them.
#[test]
fn stages_are_one_list() {
    let js = source("js/stages.js");
    let line = |name: &str| listed(&js, &format!("export const {name} ="));
    let all: Vec<String> = Stage::ALL.iter().map(|s| s.as_str().to_string()).collect();
    assert_eq!(
        line("STAGES"),
        all,
        "js/stages.js STAGES, in Stage::ALL's order"
    );
    let terminal: Vec<String> = Stage::ALL
        .iter()
        .filter(|s| s.is_terminal())
        .map(|s| s.as_str().to_string())
        .collect();
    same(
        "terminal stages",
        &[
            ("Stage::is_terminal", terminal),
            ("js/stages.js TERMINAL", line("TERMINAL")),
        ],
    );
    let types = source("src/js/types.rs");
    same(
        "stages",
        &[
            ("Stage::ALL", all),
            (
                "Stage (src/js/types.rs)",
                listed(&types, "export type Stage ="),
            ),
        ],
    );
    // No other JavaScript entry keeps a list of its own.
    for f in ["js/groups.js", "js/publish.js", "js/inspector.js"] {
        let text = source(f);
        assert!(
            !text.contains("\"superseded\""),
            "{f} lists stages: import them from ./stages.js"
        );
    }
}

#[test]
fn option_keys_are_one_list() {
    let outbox = source("src/js/outbox.rs");
    let input = source("src/js/input.rs");
    let types = source("src/js/types.rs");
    let docs = source("docs/API.md");

    // Outbox.open: the shape (its last key, `tag`, is handleSync's), the known keys, the
    // reads, the TypeScript interface and docs/API.md's table.
    let open = shape(&outbox, "OpenOptions");
    reads_match_shape(&outbox, &open, "Outbox.open options");
    let (tag, open_keys) = keys(&open)
        .split_last()
        .map(|(t, k)| (t.clone(), k.to_vec()))
        .unwrap();
    assert_eq!(tag, "tag");
    same(
        "Outbox.open options",
        &[
            ("the OpenOptions shape", open_keys),
            ("OPEN_KEYS", const_list(&outbox, "OPEN_KEYS")),
            (
                "OutboxOptions (src/js/types.rs)",
                ts_interface(&types, "OutboxOptions"),
            ),
            (
                "the options table of docs/API.md",
                docs_table(&docs, "## `Outbox.open(options?)`"),
            ),
        ],
    );
    same(
        "handleSync options",
        &[
            (
                "HandleSyncOptions (src/js/types.rs)",
                ts_interface(&types, "HandleSyncOptions"),
            ),
            ("the OpenOptions shape's last key", vec![tag]),
        ],
    );

    // enqueue, enqueueMany, list, status, flush and purge.
    let plan = shape(&input, "PlanOptions");
    reads_match_shape(&outbox, &plan, "enqueue options");
    let enqueue = ts_interface(&types, "EnqueueOptions");
    same(
        "enqueue options",
        &[
            ("the PlanOptions shape", keys(&plan)),
            ("ENQUEUE_KEYS", const_list(&input, "ENQUEUE_KEYS")),
            ("EnqueueOptions (src/js/types.rs)", enqueue.clone()),
        ],
    );
    let item = ts_interface(&types, "EnqueueItem");
    same(
        "enqueueMany items",
        &[
            ("ITEM_KEYS", const_list(&input, "ITEM_KEYS")),
            (
                "EnqueueItem and EnqueueOptions (src/js/types.rs)",
                item.into_iter().chain(enqueue).collect(),
            ),
        ],
    );
    let list = shape(&input, "ListOptions");
    reads_match_shape(&outbox, &list, "list options");
    same(
        "list options",
        &[
            ("the ListOptions shape", keys(&list)),
            ("LIST_KEYS", const_list(&input, "LIST_KEYS")),
            (
                "ListOptions (src/js/types.rs)",
                ts_interface(&types, "ListOptions"),
            ),
        ],
    );
    let filter = shape(&input, "FilterOptions");
    reads_match_shape(&outbox, &filter, "status and flush options");
    let status = const_list(&input, "STATUS_KEYS");
    let flush = const_list(&input, "FLUSH_KEYS");
    same(
        "status and flush options",
        &[
            ("the FilterOptions shape", keys(&filter)),
            (
                "STATUS_KEYS and FLUSH_KEYS",
                [status.clone(), flush.clone()].concat(),
            ),
        ],
    );
    same(
        "status options",
        &[
            ("STATUS_KEYS", status),
            (
                "StatusOptions (src/js/types.rs)",
                ts_interface(&types, "StatusOptions"),
            ),
        ],
    );
    same(
        "flush options",
        &[
            ("FLUSH_KEYS", flush),
            (
                "FlushOptions (src/js/types.rs)",
                ts_interface(&types, "FlushOptions"),
            ),
        ],
    );
    let purge = shape(&input, "PurgeOptions");
    reads_match_shape(&outbox, &purge, "purge options");
    same(
        "purge options",
        &[
            ("the PurgeOptions shape", keys(&purge)),
            ("PURGE_KEYS", const_list(&input, "PURGE_KEYS")),
            (
                "PurgeOptions (src/js/types.rs)",
                ts_interface(&types, "PurgeOptions"),
            ),
        ],
    );
}
