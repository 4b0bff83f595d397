//! Cron triggers. Every router watches the Workers, but only the one holding
//! the cron Lease (`isolane-leader`) runs their schedules: at each tick it
//! sends the Worker's `scheduled` handler a bodiless request carrying the
//! tick, where the Worker's requests run (placement, node channels and
//! failover are the proxy's), then records the run in `status.cron`, in
//! `isolane_router_cron_runs_total{outcome}` and, when it failed, in a
//! Warning event on the Worker.
//!
//! # What is guaranteed
//! - A tick runs at most once per leadership: the leader steps down before
//!   its Lease can pass to another router (`renew_deadline` <
//!   `lease_duration`), and a new leader runs only ticks due after it took
//!   the Lease. Ticks due while no router held it are not run (they are
//!   missed, as a crontab's are while the machine is off).
//! - A node that refuses a tick before running it (draining, revision not
//!   loaded) or is lost during it means one more try on the next node, with
//!   the same `controller.scheduledTime`: a handler that must not act twice
//!   de-duplicates on (`controller.cron`, `controller.scheduledTime`).
//! - A tick found more than [`MAX_LATE`] late (the router stalled) is
//!   skipped and counted `missed`, so a stall never turns into a burst.

mod report;
mod scheduler;
mod table;
mod tick;

pub use report::Reporter;
pub use scheduler::{CronConfig, MAX_LATE, run, run_alone};
pub use table::{CronTable, CronWorker};
pub use tick::{TickFailure, run_tick};
