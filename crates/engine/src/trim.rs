//! Idle trimming: an isolate that ran a request is queued, and once its
//! thread has been quiet for [`TRIM_QUIET`] (no request arrived or ended,
//! none in flight or waiting) the job loop trims the queued isolates one at
//! a time, checking for work between them: a full, memory-reducing
//! collection in each (`WorkerIsolate::trim`), which compacts its heap and
//! gives the pages it no longer uses back to the system, the young
//! generation's included. A request only ever waits behind one trim, and a
//! busy thread trims nothing, so the warm path is unchanged; an idle isolate
//! holds about 0.6 MiB less (docs/benchmarks.md, section 5).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use std::time::Duration;

use crate::isolate::WorkerIsolate;
use crate::pool::{Evicted, Pool};

/// How long a thread must be quiet before it trims: long enough that a
/// worker's next request in a burst or a steady trickle rarely finds its
/// isolate freshly trimmed (its young generation then grows again).
pub(crate) const TRIM_QUIET: Duration = Duration::from_secs(1);

/// The isolates that ran a request since they were last trimmed, oldest
/// first; each at most once.
#[derive(Default)]
pub(crate) struct TrimQueue(RefCell<VecDeque<Weak<WorkerIsolate>>>);

impl TrimQueue {
    /// `isolate` ran a request: trim it when the thread is next quiet.
    pub(crate) fn push(&self, isolate: &Rc<WorkerIsolate>) {
        if isolate.queue_for_trim() {
            self.0.borrow_mut().push_back(Rc::downgrade(isolate));
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }

    /// Trims the first queued isolate still alive and idle, and measures
    /// its heap again for the pool; false when none was left.
    pub(crate) fn trim_one(&self, pool: &RefCell<Pool>, evicted: &mut Vec<Evicted>) -> bool {
        loop {
            let Some(next) = self.0.borrow_mut().pop_front() else {
                return false;
            };
            let Some(isolate) = next.upgrade() else {
                continue;
            };
            if !isolate.trim() {
                continue;
            }
            if let Some(bundle) = isolate.worker() {
                pool.borrow_mut().remeasure(bundle, &isolate, evicted);
            }
            return true;
        }
    }
}
