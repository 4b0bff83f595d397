//! A Worker hoarding KV values (8 MiB each, read six at a time and all
//! kept) ends at its own memory limit, the process's resident memory
//! bounded, while a benign Worker on the same thread keeps answering. In
//! the `memory` binary: its RSS bound measured the `engine` binary's other
//! tests too (once 176 MiB against 160).

use isolane_engine::ExecuteError;

use crate::peak_rss::rss_mib;
use crate::support::*;

/// Stores one 8 MiB value, then reads it six at a time and keeps every
/// copy: under a 32 MiB limit the request must end at `memory_limit`.
const HOARDER: &str = r#"
export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === '/seed') {
      await env.KV.put('big', new Uint8Array(8 << 20));
      return new Response('seeded');
    }
    const keep = [];
    for (;;) {
      keep.push(...await Promise.all([...Array(6)].map(() => env.KV.get('big', 'arrayBuffer'))));
    }
  }
};
"#;

#[tokio::test]
async fn a_worker_hoarding_values_is_held_to_its_own_memory_limit() {
    let _alone = crate::peak_rss::alone().await;
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = kv_engine(dir.path());
    let neighbour = bundle("calm/neighbour", HELLO);
    let hoarder = kv_bundle("greedy/hoarder", HOARDER, memory_limits(32));
    neighbour_ok(&engine, &neighbour).await;
    assert_eq!(
        run(&engine, 0, &hoarder, "/seed").await,
        (200, "seeded".to_owned())
    );
    let before = rss_mib();
    let mut limit_hits = 0;
    for _ in 0..3 {
        let attack = {
            let engine = engine.clone();
            let hoarder = hoarder.clone();
            tokio::spawn(async move { engine.execute(0, hoarder, get("/hoard")).await })
        };
        // During: the neighbour answers while the hoarder's reads are out.
        neighbour_ok(&engine, &neighbour).await;
        match attack.await.unwrap() {
            Err(ExecuteError::MemoryLimit { limit_mib: 32 }) => limit_hits += 1,
            Err(ExecuteError::Quarantined { .. }) => {}
            Ok(response) => panic!("the hoarder answered {}", response.status()),
            Err(error) => panic!("{error:?}"),
        }
        neighbour_ok(&engine, &neighbour).await;
    }
    assert!(limit_hits > 0, "the hoarder never reached its limit");
    let grew = rss_mib().saturating_sub(before);
    println!("RSS grew by {grew} MiB over three hoarding requests ({limit_hits} at memory_limit)");
    assert!(grew < 160, "RSS grew by {grew} MiB");
}
