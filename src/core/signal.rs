//! [`Signal`]: an event seen by one piece of code, waking the task that waits for it.
//! The one wake-up primitive the crate's layers share (the flush run's nudge, the
//! IndexedDB store's blocked open and its adds' abort); single-threaded, like wasm.

use std::cell::{Cell, RefCell};
use std::task::{Context, Waker};

/// An event seen, waking the task that waits for it. It stays seen until
/// [`Signal::reset`].
#[derive(Default)]
pub struct Signal {
    fired: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Signal {
    /// Notes the event and wakes the waiting task.
    pub fn fire(&self) {
        self.fired.set(true);
        if let Some(waker) = self.waker.borrow_mut().take() {
            waker.wake();
        }
    }

    /// Whether the event was seen; if not, `cx`'s task is woken when it is.
    pub fn poll_fired(&self, cx: &Context<'_>) -> bool {
        if self.fired.get() {
            return true;
        }
        *self.waker.borrow_mut() = Some(cx.waker().clone());
        false
    }

    /// Whether the event was seen (no waker kept).
    pub fn fired(&self) -> bool {
        self.fired.get()
    }

    /// Forgets the event: the next [`Signal::poll_fired`] waits for a new one.
    pub fn reset(&self) {
        self.fired.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::Signal;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Wake, Waker};

    struct Count(AtomicU32);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn fire_wakes_the_waiting_task_once_and_stays_seen_until_reset() {
        let count = Arc::new(Count(AtomicU32::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let cx = Context::from_waker(&waker);
        let signal = Signal::default();
        assert!(!signal.poll_fired(&cx));
        signal.fire();
        signal.fire();
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "one wake per wait");
        assert!(signal.poll_fired(&cx));
        signal.reset();
        assert!(!signal.poll_fired(&cx));
        signal.fire();
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
    }
}
