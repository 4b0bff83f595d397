//! Anonymous clients cannot turn the thread's in-flight bound against a
//! benign Worker: slow readers of four namespaces' public Workers fill a
//! thread's slots (each namespace within its share), and a Worker of
//! another namespace on the same thread still answers.

use std::time::Duration;

use isolane_engine::Limits;
use isolane_proto::runtime::v1::{ExecuteRequest, execute_response::Frame as Out};

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

const HOGS: usize = 4;
const LIMIT: usize = 16;
const DURING: usize = 20;

/// The benign Worker's answer, or why not (refused, or no answer in time).
async fn benign(node: &TestNode) -> Result<String, String> {
    let mut client = node.client(0).await;
    let call = call(&mut client, head("GET", "web/hello", "r1", 0), &[]);
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
    node.deploy(
        "web/hello",
        "r1",
        "export default { fetch() { return new Response('hello'); } };",
    );
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
