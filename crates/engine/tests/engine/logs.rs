//! What the engine logs, captured for tests: one process-wide `tracing`
//! subscriber (installed on first use) that keeps every event with its
//! fields, so a test can ask what was logged for its own worker id while
//! other tests run beside it.

use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One logged event: its level, message and `worker.id`, and every field as
/// `name=value` text.
#[derive(Debug, Clone)]
pub struct Logged {
    pub level: Level,
    pub message: String,
    pub worker: String,
    pub fields: String,
}

static EVENTS: Mutex<Vec<Logged>> = Mutex::new(Vec::new());

/// Starts capturing (idempotent); call before the engine logs anything a
/// test wants to see.
pub fn capture() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let subscriber = tracing_subscriber::registry().with(Capture);
        // Another test binary's subscriber cannot be there: this is the only
        // place that installs one.
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
}

/// The events logged so far for worker `id`.
pub fn for_worker(id: &str) -> Vec<Logged> {
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.worker == id)
        .cloned()
        .collect()
}

struct Capture;

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut visitor = Fields::default();
        event.record(&mut visitor);
        EVENTS.lock().unwrap().push(Logged {
            level: *event.metadata().level(),
            message: visitor.message,
            worker: visitor.worker,
            fields: visitor.all,
        });
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    worker: String,
    all: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_owned(),
            "worker.id" => self.worker = value.to_owned(),
            _ => {}
        }
        let _ = write!(self.all, "{}={value} ", field.name());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        match field.name() {
            "message" => self.message = text.clone(),
            // `%id` fields arrive as Display through Debug: no quotes.
            "worker.id" => self.worker = text.trim_matches('"').to_owned(),
            _ => {}
        }
        let _ = write!(self.all, "{}={text} ", field.name());
    }
}
