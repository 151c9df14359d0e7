//! One operation at a time over a backend that asks for it
//! ([`super::KvBackend::one_run_at_a_time`]; the edge build's storage adapters): built
//! into the edge build and tests only.

use std::cell::{Cell, RefCell};
use std::task::{Poll, Waker};

/// One operation at a time ([`super::KvBackend::one_run_at_a_time`]): an operation waits while
/// another holds the turn, and every waiter is woken when it is given back (the first
/// polled takes it). A waiter dropped while waiting leaves only its stale waker.
#[derive(Debug, Default)]
pub(super) struct Turn {
    busy: Cell<bool>,
    waiting: RefCell<Vec<Waker>>,
}

/// The turn, held: given back when dropped.
pub(super) struct Held<'a>(&'a Turn);

impl Turn {
    pub(super) async fn take(&self) -> Held<'_> {
        std::future::poll_fn(|cx| {
            if self.busy.replace(true) {
                self.waiting.borrow_mut().push(cx.waker().clone());
                return Poll::Pending;
            }
            Poll::Ready(())
        })
        .await;
        Held(self)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.busy.set(false);
        for waker in self.0.waiting.take() {
            waker.wake();
        }
    }
}
