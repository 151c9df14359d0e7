//! [`Notify`]: a list of wakers to wake when a connection's state changes.

use std::cell::RefCell;
use std::task::Waker;

/// Wakers waiting for "something changed"; each waiter re-checks its own condition.
#[derive(Default)]
pub(crate) struct Notify {
    wakers: RefCell<Vec<Waker>>,
}

impl Notify {
    /// Remembers `waker` (once) until the next [`Notify::notify_all`].
    pub(crate) fn register(&self, waker: &Waker) {
        let mut wakers = self.wakers.borrow_mut();
        if !wakers.iter().any(|w| w.will_wake(waker)) {
            wakers.push(waker.clone());
        }
    }

    /// Wakes every registered waker.
    pub(crate) fn notify_all(&self) {
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        for w in wakers {
            w.wake();
        }
    }
}
