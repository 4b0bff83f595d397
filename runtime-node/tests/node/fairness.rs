//! Neighbours on one thread, through the node's own listeners:
//!
//! - anonymous clients cannot turn the thread's in-flight bound against a
//!   benign Worker: slow readers of four namespaces' public Workers fill a
//!   thread's slots (each namespace within its share), and a Worker of
//!   another namespace on the same thread still answers;
//! - a flood of long turns on a thread delays a benign Worker's request,
//!   read by the thread's own listener, by about the one turn running when
//!   it arrived.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use isolane_engine::Limits;
use isolane_node::ListenerMode;
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::{ExecuteRequest, execute_response::Frame as Out};
use tonic::transport::Channel;

use crate::support::*;

/// Streams 256 MiB, 64 KiB at a time, as fast as its reader takes it.
const STREAMS_A_LOT: &str = "export default { fetch() {
    const chunk = new Uint8Array(65536);
    let sent = 0;
    return new Response(new ReadableStream({
        pull(controller) {
            if (sent++ < 4096) controller.enqueue(chunk); else controller.close();
        },
    }));
} };";

/// The benign Worker, `web/hello`.
const HELLO_WEB: &str = "export default { fetch() { return new Response('hello'); } };";

const HOGS: usize = 4;
const LIMIT: usize = 16;
const DURING: usize = 20;

/// The benign Worker's answer, or why not (refused, or no answer in time).
async fn benign(node: &TestNode) -> Result<String, String> {
    benign_on(&mut node.client(0).await).await
}

/// The benign Worker's answer over a connection already open.
async fn benign_on(client: &mut RuntimeClient<Channel>) -> Result<String, String> {
    let call = call(client, head("GET", "web/hello", "r1", 0), &[]);
    match tokio::time::timeout(Duration::from_secs(30), call).await {
        Ok(Ok(answer)) if answer.head.status == 200 => Ok(answer.text()),
        Ok(Ok(answer)) => Err(format!("status {}", answer.head.status)),
        Ok(Err(status)) => Err(format!("{:?}: {}", status.code(), status.message())),
        Err(_) => Err("no answer within 30 s".into()),
    }
}

#[tokio::test]
async fn slow_readers_of_four_namespaces_cannot_lock_a_fifth_out_of_a_thread() {
    let node = start(Shape {
        max_inflight: LIMIT,
        ..Shape::default()
    });
    let share = LIMIT / HOGS;
    let long = Limits {
        wall_ms: 600_000,
        ..Limits::default()
    };
    for n in 0..HOGS {
        node.deploy_with(&format!("hog{n}/stream"), "r1", STREAMS_A_LOT, long);
    }
    node.deploy("web/hello", "r1", HELLO_WEB);
    assert_eq!(benign(&node).await.as_deref(), Ok("hello"), "before");

    // The attack: each hog namespace's share of thread 0, every request on
    // a connection of its own, its head read and then its body never.
    let mut readers = Vec::new();
    for n in 0..HOGS {
        for _ in 0..share {
            let mut client = node.client(0).await;
            let frames = vec![
                ExecuteRequest::head(head("GET", &format!("hog{n}/stream"), "r1", 0)),
                ExecuteRequest::end(),
            ];
            let mut responses = client
                .execute(tokio_stream::iter(frames))
                .await
                .unwrap()
                .into_inner();
            match next_frame(&mut responses).await {
                Out::Head(head) => assert_eq!(head.status, 200),
                other => panic!("a head first, not {other:?}"),
            }
            readers.push((client, responses));
        }
    }
    node.wait_in_flight(0, LIMIT, "the thread full of slow readers")
        .await;
    // The hogs stay capped: one more of theirs is refused.
    let mut client = node.client(0).await;
    let more = call(&mut client, head("GET", "hog0/stream", "r1", 0), &[]).await;
    assert_eq!(
        more.map(|_| ()).unwrap_err().code(),
        tonic::Code::ResourceExhausted
    );

    let mut answered = 0;
    let mut failures = Vec::new();
    for _ in 0..DURING {
        match benign(&node).await {
            Ok(_) => answered += 1,
            Err(why) => failures.push(why),
        }
    }
    eprintln!(
        "during the attack: {answered} of {DURING} benign requests answered 200 (failures: {:?})",
        failures.first()
    );
    assert_eq!(
        answered, DURING,
        "the benign Worker was locked out: {failures:?}"
    );
    assert_eq!(
        node.admission.in_flight(0),
        LIMIT,
        "the slow readers still hold the thread"
    );

    drop(readers);
    node.wait_in_flight(0, 0, "every slot free").await;
    assert_eq!(benign(&node).await.as_deref(), Ok("hello"), "after");
}

/// About 50 ms of CPU in one turn (no await).
const SPINS: &str = "export default { fetch() {
    let x = 0;
    for (let i = 0; i < 10000000; i++) x = (x * 31 + i) | 0;
    return new Response('long' + (x & 1));
} };";

/// Every other turn spins as long, the others answer at once: a long turn
/// that follows a short one is the hardest to see coming.
const ALTERNATES: &str = "let turns = 0; export default { fetch() {
    if (++turns % 2) return new Response('short');
    let x = 0;
    for (let i = 0; i < 10000000; i++) x = (x * 31 + i) | 0;
    return new Response('long' + (x & 1));
} };";

/// The flood: all the requests one namespace may have on the thread (a
/// quarter of its slots). One namespace, so the benign one is the next to
/// start once read: with several flooding, it would also wait for those
/// whose CPU account is behind the thread's clock (fair queuing,
/// `crates/engine/src/schedule.rs`), which is not what is tested here.
const FLOOD: usize = 16;

/// The node's per-thread listener runs on its engine thread's runtime, so a
/// request sent to it is read only when the thread's task set goes back to
/// the runtime. Requests waiting on the thread start in batches whose
/// answers go out together (`crates/engine/src/thread.rs`, `BATCH`): a
/// request arriving behind a flood of long turns must still wait behind
/// about one of them, not behind the whole batch, and then start before
/// the flood's others (its namespace has used nothing).
#[tokio::test]
async fn a_request_arriving_behind_a_flood_of_long_turns_waits_behind_about_one() {
    benign_waits_behind_about_one_long_turn_of_a_flood(SPINS).await;
}

/// The same flood, its long turns each after a short one of its namespace:
/// the thread guesses a turn's length from its namespace's last turns.
#[tokio::test]
async fn long_turns_that_follow_short_ones_delay_a_neighbour_no_longer() {
    benign_waits_behind_about_one_long_turn_of_a_flood(ALTERNATES).await;
}

/// Floods thread 0 with `script`'s requests (its namespace's share of the
/// slots, over one connection), sends the benign Worker's request while
/// most of them wait, and counts the flood's long turns that answered
/// between its sending and its answer: one (the turn running when it
/// arrived), or two when this task had not yet counted the answer of the
/// turn before when it sent. The benign Worker answers before, during and
/// after.
async fn benign_waits_behind_about_one_long_turn_of_a_flood(script: &str) {
    let node = start(Shape {
        threads: 1,
        max_inflight: FLOOD * 4,
        listeners: ListenerMode::PerThread,
        ..Shape::default()
    });
    let long = Limits {
        cpu_ms: 30_000,
        wall_ms: 300_000,
        ..Limits::default()
    };
    node.deploy_with("spin/spin", "r1", script, long);
    node.deploy("web/hello", "r1", HELLO_WEB);
    // Open before the flood: a new connection's handshake would wait
    // behind a turn at each of its round trips.
    let mut benign_client = node.client(0).await;
    let before = benign_on(&mut benign_client).await;
    assert_eq!(before.as_deref(), Ok("hello"), "before");
    // The spinner's isolate made before the flood.
    let mut client = node.client(0).await;
    let warm = call(&mut client, head("GET", "spin/spin", "r1", 0), &[]).await;
    assert_eq!(warm.unwrap().head.status, 200);

    let long_done = Arc::new(AtomicUsize::new(0));
    let mut flood = Vec::new();
    for _ in 0..FLOOD {
        let (mut client, long_done) = (client.clone(), long_done.clone());
        flood.push(tokio::spawn(async move {
            let answer = call(&mut client, head("GET", "spin/spin", "r1", 0), &[]).await?;
            if answer.text().starts_with("long") {
                long_done.fetch_add(1, Ordering::SeqCst);
            }
            Ok::<_, tonic::Status>(answer.head.status)
        }));
    }
    isolane_testenv::wait_until(
        "most of the flood admitted",
        Duration::from_secs(30),
        || {
            let admitted = node.admission.in_flight(0) >= FLOOD * 3 / 4;
            async move { admitted.then_some(()) }
        },
    )
    .await;
    let sent = std::time::Instant::now();
    let before = long_done.load(Ordering::SeqCst);
    let during = benign_on(&mut benign_client).await;
    let waited = long_done.load(Ordering::SeqCst) - before;
    eprintln!(
        "the benign request waited behind {waited} long turns ({:?}); {before} had ended before it was sent",
        sent.elapsed()
    );
    assert_eq!(during.as_deref(), Ok("hello"), "during");
    assert!(
        before < FLOOD / 4,
        "the flood was mostly over before the benign request was sent ({before} long turns done): the test proves nothing"
    );

    for turn in flood {
        assert_eq!(turn.await.unwrap().map_err(|s| s.code()), Ok(200));
    }
    let after = benign_on(&mut benign_client).await;
    assert_eq!(after.as_deref(), Ok("hello"), "after");
    assert!(
        waited <= 2,
        "the benign request waited behind {waited} of the flood's long turns, not about one"
    );
}
