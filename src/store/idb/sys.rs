//! The IndexedDB store's plumbing on `indexed_db_futures`: opening a connection,
//! transactions, batched reads and adds, and the mapping of DOM exceptions to
//! [`StoreError`]. Holds no business rule.
//!
//! Where the crate (0.6.4) lacks something, this module, and only this one, reaches the
//! underlying web-sys object through the crate's escape hatch
//! [`SystemRepr::as_sys`] (each use is marked `escape hatch:` and says what is missing):
//! - the `versionchange` transaction inside the upgrade callback (a migration that
//!   changes an existing object store, and the `meta` write, need it): the open
//!   request's, taken once the request is built;
//! - closing our connection when another context asks for a version change, and
//!   noticing a connection the browser closed (the crate's `version-change` feature
//!   is a stream that nothing would poll while the store is idle);
//! - the error a transaction aborted with (the crate reports only "aborted", and
//!   Chromium reports `QuotaExceededError` only there);
//! - committing a read-only transaction when it is dropped (the crate aborts every
//!   transaction dropped without `commit`);
//! - an `error` listener on the requests of a batch of adds: an existing key must
//!   not abort the transaction (the crate's request futures never call
//!   `preventDefault`), and the batch is awaited through its last request only, or
//!   until an `abort` listener of ours on the transaction fires (the crate's
//!   transaction listeners are awaited only by `commit` and `abort`).
//!
//! A blocked open needs no escape hatch: its future is raced against the crate's
//! `blocked` callback, and when that fires the abandoned future is handed to a task of
//! its own (if it completes later, its upgrade runs whole and the connection is closed).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::task::Poll;

use indexed_db_futures::database::{Database, VersionChangeEvent};
use indexed_db_futures::error::{Error as IdbError, OpenDbError};
use indexed_db_futures::internals::SystemRepr;
use indexed_db_futures::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::schema;
use crate::core::Signal;
use crate::store::StoreError;

/// Why an IndexedDB call failed, before it becomes a [`StoreError`]: a lost
/// connection is worth one reopen and retry; anything else is final.
#[derive(Debug)]
pub(super) enum Failure {
    /// The connection is closed or closing (version change, browser dropped it).
    Lost(String),
    /// A final error.
    Store(StoreError),
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Store(e)
    }
}

impl From<crate::core::CoreError> for Failure {
    fn from(e: crate::core::CoreError) -> Failure {
        Failure::Store(StoreError::Core(e))
    }
}

impl From<Failure> for StoreError {
    fn from(f: Failure) -> StoreError {
        match f {
            Failure::Lost(m) => StoreError::Backend(format!("IndexedDB connection lost: {m}")),
            Failure::Store(e) => e,
        }
    }
}

impl From<IdbError> for Failure {
    fn from(e: IdbError) -> Failure {
        match e {
            IdbError::DomException(e) => failure(e.as_ref().clone()),
            IdbError::Unknown(e) => failure(e.as_ref().clone()),
            other => Failure::Store(StoreError::Backend(other.to_string())),
        }
    }
}

impl From<OpenDbError> for Failure {
    fn from(e: OpenDbError) -> Failure {
        match e {
            OpenDbError::Base(e) => e.into(),
            other => Failure::Store(StoreError::Backend(other.to_string())),
        }
    }
}

/// Maps a DOM exception (or other thrown value) to a failure.
pub(super) fn failure(err: JsValue) -> Failure {
    let crate::platform::thrown::Thrown { name, message } = crate::platform::thrown(&err);
    match name.as_str() {
        "QuotaExceededError" => Failure::Store(StoreError::QuotaExceeded(if message.is_empty() {
            "the browser refused to store more data for this origin (QuotaExceededError); \
             nothing of this operation was written"
                .into()
        } else {
            message
        })),
        // An `AbortError` we did not ask for: Firefox aborts every write of a connection
        // that met a full quota, until it is reopened.
        "InvalidStateError" | "UnknownError" | "AbortError" => {
            Failure::Lost(format!("{name}: {message}"))
        }
        "" => Failure::Store(StoreError::Backend(message)),
        _ => Failure::Store(StoreError::Backend(format!("{name}: {message}"))),
    }
}

/// An open connection: the database, and whether it has been closed under us (another
/// context's version change, or the browser dropped it).
pub(super) struct Conn {
    db: Database,
    closed: Rc<Cell<bool>>,
    _on_versionchange: Closure<dyn FnMut()>,
    _on_close: Closure<dyn FnMut()>,
}

impl Conn {
    fn new(db: Database) -> Conn {
        let closed = Rc::new(Cell::new(false));
        // escape hatch: the crate has no callback for `versionchange` or `close` on an
        // open connection. We close at once so the other context's upgrade proceeds;
        // the next operation reopens.
        let raw: &web_sys::IdbDatabase = db.as_sys();
        let on_versionchange = Closure::<dyn FnMut()>::new({
            let closed = closed.clone();
            let raw = raw.clone();
            move || {
                closed.set(true);
                raw.close();
            }
        });
        let on_close = Closure::<dyn FnMut()>::new({
            let closed = closed.clone();
            move || closed.set(true)
        });
        raw.set_onversionchange(Some(on_versionchange.as_ref().unchecked_ref()));
        raw.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        Conn {
            db,
            closed,
            _on_versionchange: on_versionchange,
            _on_close: on_close,
        }
    }

    /// The database, for transactions.
    pub(super) fn db(&self) -> &Database {
        &self.db
    }

    /// True once the connection was closed under us.
    pub(super) fn is_closed(&self) -> bool {
        self.closed.get()
    }

    /// Closes the connection (a no-op when already closed).
    pub(super) fn close(&self) {
        self.closed.set(true);
        self.db.clone().close();
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let raw: &web_sys::IdbDatabase = self.db.as_sys();
        raw.set_onversionchange(None);
        raw.set_onclose(None);
    }
}

/// Opens `name` at `version`, running the schema's migrations inside `upgradeneeded`.
///
/// A newer schema on disk is [`StoreError::VersionTooNew`], nothing touched. A blocked
/// upgrade (another connection ignores `versionchange`) is [`StoreError::Blocked`] at
/// once, not a hang; the abandoned open is kept alive in a task of its own, so that if
/// it completes later its upgrade runs whole and the connection is closed at once (it
/// then blocks nobody).
pub(super) async fn open(name: &str, version: u32) -> Result<Conn, Failure> {
    let blocked = Rc::new(Signal::default());
    // Set once the request exists, before its `upgradeneeded` can fire.
    let raw_request: Rc<RefCell<Option<web_sys::IdbOpenDbRequest>>> = Rc::default();
    let mut request = Database::open(name)
        .with_version(version)
        .with_on_blocked({
            let blocked = blocked.clone();
            move |_: VersionChangeEvent| {
                blocked.fire();
                Ok(())
            }
        })
        .with_on_upgrade_needed({
            let raw_request = raw_request.clone();
            move |event: VersionChangeEvent, db: Database| {
                let tx = versionchange_transaction(raw_request.borrow().as_ref())?;
                let _ = event;
                schema::upgrade(&db, &tx)
            }
        })
        .build()?;
    // escape hatch: the request, whose `transaction` is the upgrade's (below).
    *raw_request.borrow_mut() = Some(request.as_sys().clone());
    let opened = std::future::poll_fn(|cx| {
        if blocked.poll_fired(cx) {
            return Poll::Ready(None);
        }
        std::pin::Pin::new(&mut request).poll(cx).map(Some)
    })
    .await;
    match opened {
        Some(Ok(db)) => Ok(Conn::new(db)),
        Some(Err(OpenDbError::Base(IdbError::DomException(e))))
            if crate::platform::thrown(e.as_ref()).name == "VersionError" =>
        {
            let found = stored_version(name).await.unwrap_or(0);
            Err(Failure::Store(StoreError::VersionTooNew {
                found,
                supported: schema::MAX_VERSION,
            }))
        }
        Some(Err(e)) => Err(e.into()),
        None => {
            wasm_bindgen_futures::spawn_local(async move {
                if let Ok(db) = request.await {
                    db.close();
                }
            });
            Err(Failure::Store(StoreError::Blocked(format!(
                "opening IndexedDB \"{name}\" is blocked by another connection that does not close"
            ))))
        }
    }
}

/// The version of the database on disk, read by opening it without a version (which
/// never upgrades) and closing at once.
async fn stored_version(name: &str) -> Option<u32> {
    let db = Database::open(name).await.ok()?;
    let version = db.version() as u32;
    db.close();
    Some(version)
}

/// The crate's upgrade callback gets the database and the event, but not the
/// `versionchange` transaction: it is the open request's.
fn versionchange_transaction(
    request: Option<&web_sys::IdbOpenDbRequest>,
) -> indexed_db_futures::Result<web_sys::IdbTransaction> {
    request.and_then(|req| req.transaction()).ok_or_else(|| {
        JsValue::from_str("upgradeneeded without a versionchange transaction").into()
    })
}
