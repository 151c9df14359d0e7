//! Timers: `globalThis.setTimeout`/`clearTimeout` (so they work in windows,
//! dedicated/shared/service workers and edge runtimes alike), a [`Timer`] that owns its
//! callback and cancels it on drop, and a [`Sleep`] future. A timer that cannot be set
//! is counted ([`failures`]), never silent: the flusher checks `setTimeout` before a run
//! and stops one during which a timer failed.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    // Global-scope functions: no `window`, so workers have them too.
    #[wasm_bindgen(js_name = setTimeout, catch)]
    fn set_timeout(handler: &Function, ms: i32) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
}

thread_local! {
    /// How many timers could not be set (`setTimeout` missing or throwing).
    static FAILURES: Cell<u32> = const { Cell::new(0) };
}

/// How many timers could not be set so far in this thread: a caller compares two
/// readings to learn whether one failed in between.
pub(crate) fn failures() -> u32 {
    FAILURES.with(Cell::get)
}

/// A scheduled callback. It owns its closure; dropping the timer cancels it and frees
/// the closure (nothing is ever `forget`-ed).
pub(crate) struct Timer {
    handle: JsValue,
    _closure: Closure<dyn FnMut()>,
}

impl Timer {
    /// Runs `f` once after `ms` milliseconds (clamped to setTimeout's range). `None` when
    /// the runtime has no working `setTimeout` (counted in [`failures`]).
    pub(crate) fn new(ms: u32, f: impl FnMut() + 'static) -> Option<Timer> {
        let closure = Closure::<dyn FnMut()>::new(f);
        let ms = i32::try_from(ms).unwrap_or(i32::MAX);
        let Ok(handle) = set_timeout(closure.as_ref().unchecked_ref(), ms) else {
            FAILURES.with(|n| n.set(n.get().wrapping_add(1)));
            return None;
        };
        Some(Timer {
            handle,
            _closure: closure,
        })
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        clear_timeout(&self.handle);
    }
}

#[derive(Default)]
struct SleepState {
    fired: bool,
    waker: Option<Waker>,
}

/// A future that completes after a number of milliseconds. Dropping it cancels the
/// underlying timeout. Where no timer can be set it completes at once, and the failure
/// is counted ([`failures`]): a flush run that sees it claims nothing more, stops
/// holding, and fails with `unsupported` (`src/js/runtime.rs`), so no loop of its waits
/// outlives what it has under way.
pub(crate) struct Sleep {
    ms: u32,
    state: Rc<RefCell<SleepState>>,
    timer: Option<Timer>,
}

impl Sleep {
    /// Sleeps `ms` milliseconds from the first poll.
    pub(crate) fn new(ms: u32) -> Sleep {
        Sleep {
            ms,
            state: Rc::default(),
            timer: None,
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.state.borrow().fired {
            return Poll::Ready(());
        }
        this.state.borrow_mut().waker = Some(cx.waker().clone());
        if this.timer.is_none() {
            let state = this.state.clone();
            this.timer = Timer::new(this.ms, move || {
                let waker = {
                    let mut s = state.borrow_mut();
                    s.fired = true;
                    s.waker.take()
                };
                if let Some(w) = waker {
                    w.wake();
                }
            });
            if this.timer.is_none() {
                // No timer (counted): elapse at once rather than hang.
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }
}
