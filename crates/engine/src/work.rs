//! [`Work`]: what one job asks of an engine thread, as one typed value,
//! from the caller ([`crate::Engine::run`], the node's service, an alarm,
//! a stub call, an object's socket) to the thread (`thread.rs` takes a
//! retirement before any queue, `schedule.rs` queues the rest,
//! `thread/serve.rs` answers a prewarm without running code) and on to
//! JavaScript, which gets the event as one object (`event_object.rs`,
//! `internal.handleRequest` in js/19_worker.js).
//!
//! Where a job runs (its object's home thread, or the thread placement
//! chose) and how it is sent there is `dispatch.rs`.
//!
//! Adding a kind of work (a service call, a queue batch…) is one variant
//! here, with its arm in [`Work::into_call`] (and [`Work::object`] when it
//! is an object's), and, when it calls the Worker's code, one [`Event`]
//! variant with its arm in `event_object.rs` and one `case` in
//! `internal.handleRequest` (where no compiler checks that every type has
//! its case): in Rust the compiler names every other place that must
//! decide.

use crate::alarm::AlarmEvent;
use crate::body::Body;
use crate::object_call::ObjectCall;
use crate::prewarm::Prewarm;
use crate::scheduled::ScheduledEvent;
use crate::service_call::ServiceCall;
use crate::socket::ObjectSocketEvent;
use http::Request;
use isolane_storage::QueueBatch;

/// The work of one job. A variant that carries a `request` has one from
/// its caller: its head and extensions (the request id, the trace) name the
/// job in logs, traces and tail events, as a fetch's do; the others run
/// with an empty `GET /` in its place.
#[derive(Debug)]
pub enum Work {
    /// A client's request for the Worker's `fetch` handler.
    Fetch(http::Request<Body>),
    /// A cron tick for the Worker's `scheduled` handler (`scheduled.rs`):
    /// answered with a bodiless 200 once the handler succeeded.
    Scheduled {
        event: ScheduledEvent,
        request: http::Request<Body>,
    },
    /// A Durable Object's alarm (`alarm.rs`), run on the object's home
    /// thread.
    Alarm(AlarmEvent),
    /// A stub call to a Durable Object (`object_call.rs`), run on the
    /// object's home thread: `request` is the `stub.fetch` request, or for
    /// a JS RPC call a `POST` of the serialized arguments.
    ObjectCall {
        call: ObjectCall,
        request: http::Request<Body>,
    },
    /// A call through a service binding (`host/service.rs`), run on its
    /// caller's own thread in the target Worker's isolate: `request` is
    /// the caller's `env.SVC.fetch` request, or for a JS RPC call a `POST`
    /// of the serialized arguments (`service_call.rs`).
    ServiceCall {
        call: ServiceCall,
        request: http::Request<Body>,
    },
    /// A message (or the close) of a Durable Object's hibernatable
    /// WebSocket (`socket.rs`, `isolane-web`'s `websocket/hibernation.rs`), run on the object's
    /// home thread.
    ObjectSocketEvent(ObjectSocketEvent),
    /// A batch of a queue's messages for the Worker's `queue` handler
    /// (`isolane_storage::QueueBatch`): answered with the batch's outcome as JSON.
    QueueBatch(QueueBatch),
    /// A run of a workflow instance (isolane-node's `workflows.rs`).
    WorkflowRun(isolane_storage::WorkflowDue),
    /// Load the Worker's revision into the thread's warm pool and answer a
    /// bodiless 204, calling no handler (`prewarm.rs`).
    Prewarm {
        mode: Prewarm,
        request: http::Request<Body>,
    },
    /// Drop a deleted Worker's warm isolates from the thread's pool
    /// (`retire.rs`); sent by [`crate::Engine::retire`] only.
    Retire,
}

/// What the Worker's code is called for: a job's [`Work`] once its request
/// is taken out, as JavaScript gets it (`event_object.rs`).
#[derive(Debug)]
pub(crate) enum Event {
    Fetch,
    Scheduled(ScheduledEvent),
    Alarm(AlarmEvent),
    ObjectCall(ObjectCall),
    ObjectSocketEvent(ObjectSocketEvent),
    ServiceCall(ServiceCall),
    QueueBatch(QueueBatch),
    WorkflowRun(isolane_storage::WorkflowDue),
}

impl Work {
    /// The object this work is for (`(class, id)`: an alarm, a call, a
    /// socket event), which runs on the object's home thread.
    pub(crate) fn object(&self) -> Option<(&str, &str)> {
        match self {
            Work::Alarm(alarm) => Some((&alarm.class, &alarm.id)),
            Work::ObjectCall { call, .. } => Some((&call.class, &call.id)),
            Work::ObjectSocketEvent(event) => Some((&event.class, &event.id)),
            Work::Fetch(_)
            | Work::Scheduled { .. }
            | Work::QueueBatch(_)
            | Work::WorkflowRun(_)
            | Work::ServiceCall { .. }
            | Work::Prewarm { .. }
            | Work::Retire => None,
        }
    }

    /// Whether it is a Durable Object call (never refused for its
    /// namespace's share: `thread.rs`).
    pub(crate) fn is_object_call(&self) -> bool {
        matches!(self, Work::ObjectCall { .. })
    }

    /// The job is off its thread's queue: a service or Durable Object
    /// call's place in its tree's share of it is free (`isolane-calltree`).
    pub(crate) fn off_queue(&mut self) {
        if let Work::ServiceCall { request, .. } | Work::ObjectCall { request, .. } = self {
            let extensions = request.extensions_mut();
            extensions.remove::<isolane_calltree::queue::QueuePlace>();
        }
    }

    /// Whether it is a service call (started at once on its caller's
    /// thread, beyond the slots: `thread.rs`).
    pub(crate) fn is_service_call(&self) -> bool {
        matches!(self, Work::ServiceCall { .. })
    }

    /// The request the job runs as and the event the Worker's code is
    /// called for; `Err(self)` for the work that calls no code (a prewarm,
    /// a retirement).
    // The error is the work itself, handed back as it came: as large as
    // the `Ok`, and moved once per job as the job's work is anyway.
    #[allow(clippy::result_large_err)]
    pub(crate) fn into_call(self) -> Result<(http::Request<Body>, Event), Work> {
        let empty = || http::Request::new(Body::empty());
        // The path a tail event shows (the Worker never sees it).
        let at = |p: &str| Request::get(p).body(Body::empty()).unwrap_or_default();
        Ok(match self {
            Work::Fetch(request) => (request, Event::Fetch),
            Work::Scheduled { event, request } => (request, Event::Scheduled(event)),
            Work::Alarm(alarm) => (empty(), Event::Alarm(alarm)),
            Work::ObjectCall { call, request } => (request, Event::ObjectCall(call)),
            Work::ObjectSocketEvent(event) => (empty(), Event::ObjectSocketEvent(event)),
            Work::ServiceCall { call, request } => (request, Event::ServiceCall(call)),
            Work::QueueBatch(batch) => (at(&batch.tail_path()), Event::QueueBatch(batch)),
            Work::WorkflowRun(run) => (at(&run.tail_path()), Event::WorkflowRun(run)),
            work @ (Work::Prewarm { .. } | Work::Retire) => return Err(work),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> http::Request<Body> {
        http::Request::new(Body::empty())
    }

    #[test]
    fn an_objects_work_names_its_object() {
        let alarm = Work::Alarm(AlarmEvent {
            class: "Counter".to_owned(),
            id: "a".to_owned(),
            retry_count: 0,
        });
        assert_eq!(alarm.object(), Some(("Counter", "a")));
        let call = ObjectCall {
            class: "Room".to_owned(),
            id: "b".to_owned(),
            method: None,
        };
        let call = Work::ObjectCall {
            call,
            request: request(),
        };
        assert_eq!(call.object(), Some(("Room", "b")));
        assert!(call.is_object_call());
        assert_eq!(Work::Fetch(request()).object(), None);
        let service = Work::ServiceCall {
            call: ServiceCall::default(),
            request: request(),
        };
        assert_eq!(service.object(), None);
        assert!(service.is_service_call() && !service.is_object_call());
        assert!(matches!(
            service.into_call(),
            Ok((
                _,
                Event::ServiceCall(ServiceCall {
                    entrypoint: None,
                    ..
                })
            ))
        ));
        assert!(!Work::Fetch(request()).is_object_call());
    }

    #[test]
    fn prewarms_and_retirements_call_no_code() {
        let prewarm = Work::Prewarm {
            mode: Prewarm::Standby,
            request: request(),
        };
        assert!(matches!(
            prewarm.into_call(),
            Err(Work::Prewarm {
                mode: Prewarm::Standby,
                ..
            })
        ));
        assert!(matches!(Work::Retire.into_call(), Err(Work::Retire)));
        let tick = Work::Scheduled {
            event: ScheduledEvent {
                cron: "* * * * *".to_owned(),
                scheduled_time_ms: 1,
            },
            request: request(),
        };
        assert!(matches!(tick.into_call(), Ok((_, Event::Scheduled(_)))));
        assert!(matches!(
            Work::Fetch(request()).into_call(),
            Ok((_, Event::Fetch))
        ));
    }
}
