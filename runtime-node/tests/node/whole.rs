//! Whole answers (`RequestHead.whole_answer`): a response whose body is
//! complete with its head leaves as one message when the caller asks, and
//! in head, body and end frames otherwise.

use isolane_proto::Outcome;

use crate::support::*;

fn asking(method: &str, worker: &str) -> isolane_proto::runtime::v1::RequestHead {
    let mut head = head(method, worker, "r1", 0);
    head.whole_answer = true;
    head
}

#[tokio::test]
async fn a_complete_small_body_comes_whole_only_when_asked() {
    let node = start(Shape::default());
    node.deploy("demo/hello", "r1", HELLO);
    node.deploy(
        "demo/empty",
        "r1",
        "export default { fetch() { return new Response(null, { status: 204 }); } };",
    );
    let mut client = node.client(0).await;

    let whole = call(&mut client, asking("GET", "demo/hello"), &[])
        .await
        .unwrap();
    assert!(whole.whole, "asked for, and complete: one message");
    assert_eq!(whole.head.status, 200);
    assert_eq!(whole.text(), "hello from /path yes");
    assert_eq!(whole.header("x-worker").as_deref(), Some("hello"));

    let empty = call(&mut client, asking("GET", "demo/empty"), &[])
        .await
        .unwrap();
    assert!(empty.whole);
    assert_eq!(empty.head.status, 204);
    assert!(empty.body.is_empty());

    // A caller that does not read whole answers gets frames.
    let framed = call(&mut client, head("GET", "demo/hello", "r1", 0), &[])
        .await
        .unwrap();
    assert!(!framed.whole);
    assert_eq!(framed.text(), "hello from /path yes");
    assert_eq!(framed.end.outcome(), Outcome::Ok);

    // Every one of them was counted once, as served.
    let metrics = node.metrics_text();
    let line = r#"isolane_node_requests_total{outcome="ok",thread="0"} 3"#;
    assert!(metrics.contains(line), "{line} in\n{metrics}");
}

#[tokio::test]
async fn a_streamed_or_large_body_comes_in_frames_even_when_asked() {
    let node = start(Shape::default());
    node.deploy(
        "demo/stream",
        "r1",
        "export default { fetch() {
            const { readable, writable } = new TransformStream();
            const writer = writable.getWriter();
            (async () => {
                await writer.write(new TextEncoder().encode('one '));
                await new Promise((resolve) => setTimeout(resolve, 20));
                await writer.write(new TextEncoder().encode('two'));
                await writer.close();
            })();
            return new Response(readable);
        } };",
    );
    node.deploy(
        "demo/large",
        "r1",
        "export default { fetch() { return new Response('x'.repeat(64 * 1024 + 1)); } };",
    );
    node.deploy(
        "demo/fails",
        "r1",
        "export default { fetch() {
            const body = new ReadableStream({ pull(c) { c.error(new Error('midway')); } });
            return new Response(body);
        } };",
    );
    let mut client = node.client(0).await;

    let streamed = call(&mut client, asking("GET", "demo/stream"), &[])
        .await
        .unwrap();
    assert!(!streamed.whole, "a body still being written is not whole");
    assert_eq!(streamed.text(), "one two");
    assert_eq!(streamed.end.outcome(), Outcome::Ok);

    let large = call(&mut client, asking("GET", "demo/large"), &[])
        .await
        .unwrap();
    assert!(!large.whole, "over 64 KiB is not whole");
    assert_eq!(large.body.len(), 64 * 1024 + 1);

    let failed = call(&mut client, asking("GET", "demo/fails"), &[])
        .await
        .unwrap();
    assert!(!failed.whole, "a failed body is never whole");
    assert_eq!(failed.end.outcome(), Outcome::Exception);
}
