//! The Cache API from workers: put/match/delete across requests, named
//! caches, what is refused, conditional and range matches, one namespace
//! never reading another's entries, and a tenant filling the cache evicting
//! only its own entries.

use std::sync::Arc;

use isolane_engine::{Body, CacheConfig, EgressConfig, EngineConfig, PoolMode};

use crate::support::*;

/// `/put?key=&v=&cc=`, `/get?key=`, `/delete?key=`, `?cache=` for a named
/// cache. A hit answers with the stored body and `x-status`/`x-cache`.
const CACHER: &str = r#"
export default {
  async fetch(request) {
    const url = new URL(request.url);
    const q = url.searchParams;
    const cache = q.get('cache') ? await caches.open(q.get('cache')) : caches.default;
    const key = 'https://cached.example' + (q.get('key') ?? '/k');
    switch (url.pathname) {
      case '/put': {
        const size = Number(q.get('size') ?? 0);
        const body = size ? 'x'.repeat(size) : q.get('v');
        await cache.put(key, new Response(body, { headers: {
          'cache-control': q.get('cc') ?? 'max-age=600', etag: '"e1"' } }));
        return new Response('stored');
      }
      case '/get': {
        const hit = await cache.match(new Request(key, { headers: request.headers }));
        if (!hit) return new Response('miss', { status: 404 });
        return new Response(await hit.text(), { headers: {
          'x-status': String(hit.status), 'x-cache': String(hit.headers.get('cf-cache-status')) } });
      }
      case '/delete':
        return new Response(String(await cache.delete(key)));
    }
    return new Response('no route', { status: 400 });
  }
};
"#;

async fn call(
    engine: &isolane_engine::Engine,
    worker: &Arc<isolane_engine::WorkerBundle>,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, Option<String>) {
    let mut request = http::Request::builder().uri(format!("http://example.test{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = engine
        .execute(0, worker.clone(), request.body(Body::empty()).unwrap())
        .await
        .expect("a response");
    let x_status = response
        .headers()
        .get("x-status")
        .map(|v| v.to_str().unwrap().to_owned());
    let (status, body) = text(Ok(response)).await;
    (status, body, x_status)
}

#[tokio::test]
async fn entries_outlive_the_request_and_caches_are_separate() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle("shop/front", CACHER);
    assert_eq!(call(&engine, &worker, "/get", &[]).await.0, 404);
    assert_eq!(
        call(&engine, &worker, "/put?v=first", &[]).await.1,
        "stored"
    );
    let (status, body, x_status) = call(&engine, &worker, "/get", &[]).await;
    assert_eq!(
        (status, body.as_str(), x_status.as_deref()),
        (200, "first", Some("200"))
    );
    // A named cache is another cache.
    assert_eq!(
        call(&engine, &worker, "/get?cache=sessions", &[]).await.0,
        404
    );
    call(&engine, &worker, "/put?cache=sessions&v=named", &[]).await;
    assert_eq!(
        call(&engine, &worker, "/get?cache=sessions", &[]).await.1,
        "named"
    );
    assert_eq!(call(&engine, &worker, "/get", &[]).await.1, "first");
    // Another worker of the same namespace shares its caches.
    let sibling = bundle("shop/back", CACHER);
    assert_eq!(call(&engine, &sibling, "/get", &[]).await.1, "first");
    // Conditional and range matches.
    let (_, body, x_status) = call(&engine, &worker, "/get", &[("if-none-match", "\"e1\"")]).await;
    assert_eq!((body.as_str(), x_status.as_deref()), ("", Some("304")));
    let (_, body, x_status) = call(&engine, &worker, "/get", &[("range", "bytes=1-3")]).await;
    assert_eq!((body.as_str(), x_status.as_deref()), ("irs", Some("206")));
    // Delete, then it is gone.
    assert_eq!(call(&engine, &worker, "/delete", &[]).await.1, "true");
    assert_eq!(call(&engine, &worker, "/delete", &[]).await.1, "false");
    assert_eq!(call(&engine, &worker, "/get", &[]).await.0, 404);
    // Not stored: no-store, private, max-age=0.
    for cc in ["no-store", "private", "max-age=0"] {
        call(&engine, &worker, &format!("/put?v=x&cc={cc}"), &[]).await;
        assert_eq!(call(&engine, &worker, "/get", &[]).await.0, 404, "{cc}");
    }
}

#[tokio::test]
async fn what_put_refuses() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle(
        "shop/errors",
        r#"
export default {
  async fetch() {
    const cache = caches.default;
    const out = [];
    const attempt = async (what, f) => {
      try { await f(); out.push(what + ':ok'); } catch (e) { out.push(what + ':' + e.name); }
    };
    await attempt('post', () => cache.put(new Request('https://a.example/', { method: 'POST', body: 'x' }), new Response('x')));
    await attempt('206', () => cache.put('https://a.example/', new Response('x', { status: 206 })));
    await attempt('vary', () => cache.put('https://a.example/', new Response('x', { headers: { vary: 'Accept, *' } })));
    await attempt('scheme', () => cache.put('ftp://a.example/', new Response('x')));
    await attempt('not-a-response', () => cache.put('https://a.example/', 'x'));
    const used = new Response('x'); await used.text();
    await attempt('used', () => cache.put('https://a.example/', used));
    await attempt('add', () => cache.add('https://a.example/'));
    // A Set-Cookie response resolves but is not stored.
    await attempt('cookie', () => cache.put('https://a.example/c', new Response('x', { headers: { 'set-cookie': 'a=1', 'cache-control': 'max-age=60' } })));
    out.push('cookie-stored:' + Boolean(await cache.match('https://a.example/c')));
    // match and delete ignore non-GET requests unless told otherwise.
    await cache.put('https://a.example/m', new Response('m', { headers: { 'cache-control': 'max-age=60' } }));
    const head = new Request('https://a.example/m', { method: 'HEAD' });
    out.push('head:' + Boolean(await cache.match(head)) + ',' + Boolean(await cache.match(head, { ignoreMethod: true })));
    out.push('consumed:' + (await cache.match('https://a.example/m')).bodyUsed);
    return new Response(out.join(' '));
  }
};
"#,
    );
    let (status, body) = run(&engine, 0, &worker, "/").await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        "post:TypeError 206:TypeError vary:TypeError scheme:TypeError not-a-response:TypeError \
         used:TypeError add:TypeError cookie:ok cookie-stored:false head:false,true consumed:false"
    );
}

/// A tenant that reads another namespace's keys gets nothing, and one that
/// fills the cache evicts only its own entries; a benign worker on the same
/// thread answers before, during and after.
#[tokio::test]
async fn a_tenant_cannot_read_or_flush_another_namespace() {
    let (engine, _) = engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        egress: EgressConfig::open(),
        cache: CacheConfig {
            capacity_bytes: 1 << 20,
            namespace_bytes: 256 << 10,
            ..CacheConfig::default()
        },
        ..EngineConfig::default()
    });
    let neighbour = bundle("bystander/hello", HELLO);
    let victim = bundle("victim/site", CACHER);
    let thief = bundle("attacker/site", CACHER);
    assert_eq!(run(&engine, 0, &neighbour, "/").await.1, "hello");
    for i in 0..4 {
        call(&engine, &victim, &format!("/put?key=/v{i}&size=16384"), &[]).await;
    }
    // Same URL, same cache name, another namespace: a miss.
    for i in 0..4 {
        assert_eq!(
            call(&engine, &thief, &format!("/get?key=/v{i}"), &[])
                .await
                .0,
            404
        );
        assert_eq!(
            call(&engine, &thief, &format!("/delete?key=/v{i}"), &[])
                .await
                .1,
            "false"
        );
    }
    // 64 × 64 KiB from the attacker: 16 times its share.
    for i in 0..64 {
        call(&engine, &thief, &format!("/put?key=/a{i}&size=65536"), &[]).await;
        if i % 16 == 0 {
            assert_eq!(run(&engine, 0, &neighbour, "/").await.1, "hello");
            assert_eq!(call(&engine, &victim, "/get?key=/v0", &[]).await.0, 200);
        }
    }
    for i in 0..4 {
        let (status, body, _) = call(&engine, &victim, &format!("/get?key=/v{i}"), &[]).await;
        assert_eq!((status, body.len()), (200, 16384), "victim entry {i}");
    }
    // The attacker kept at most its share: its oldest entries are gone,
    // its newest kept.
    assert_eq!(call(&engine, &thief, "/get?key=/a0", &[]).await.0, 404);
    assert_eq!(call(&engine, &thief, "/get?key=/a63", &[]).await.0, 200);
    let kept = {
        let mut kept = 0;
        for i in 0..64 {
            if call(&engine, &thief, &format!("/get?key=/a{i}"), &[])
                .await
                .0
                == 200
            {
                kept += 1;
            }
        }
        kept
    };
    assert!((1..=4).contains(&kept), "attacker kept {kept} × 64 KiB");
    assert_eq!(run(&engine, 0, &neighbour, "/").await.1, "hello");
}
