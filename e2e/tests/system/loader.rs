//! Worker Loader bindings (Dynamic Workers, issue 60) in a cluster: the
//! operator, two nodes and the router as processes. The caller of
//! `cli/tests/dev_loader.rs` (`compat/apps/loader/caller.js`), applied as
//! a Worker with a `workerLoader` binding, loads code given at run time on
//! whichever node serves it, through the router: every module type by
//! fetch and RPC, many ids, code without network, and an endless loop
//! ending at its own lowered CPU limit with an error the caller catches.

use isolane_e2e::workers::inline_worker;
use isolane_worker::Binding;

use super::{System, names};

const HOST: &str = "loader.test";
const CALLER: &str = include_str!("../../../compat/apps/loader/caller.js");
const IDS: usize = 50;

fn loaded(id: &str) -> String {
    format!(
        "fetch:200 {id} HELLO! sum=42 raw=1,2,3 /{id}|rpc:hello caller from {id} {{\"tier\":\"gold\"}}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_loads_code_at_run_time_on_the_nodes_through_the_router() {
    let system = System::start(2).await;
    let mut caller = inline_worker("caller", CALLER, &[HOST]);
    caller.spec.bindings = vec![Binding::worker_loader("LOADER")];
    let workers = [caller];
    system.kubectl_apply("loader.yaml", &workers).await;
    system.wait_ready_and_placed(&names(&workers)).await;
    system
        .wait_served(HOST, "/load/first", &loaded("first"))
        .await;
    let ingress = system.ingress();
    for i in 0..IDS {
        let id = format!("id-{i}");
        let reply = ingress
            .get(HOST, &format!("/load/{id}"))
            .await
            .expect("answered");
        assert_eq!((reply.status, reply.body), (200, loaded(&id)));
    }
    let offline = ingress.get(HOST, "/offline/fetch").await.expect("answered");
    assert!(
        offline.body.starts_with("refused ") && offline.body.contains("globalOutbound: null"),
        "{}",
        offline.body
    );
    let hostile = ingress.get(HOST, "/hostile/loop").await.expect("answered");
    assert_eq!(
        (hostile.status, hostile.body.as_str()),
        (
            503,
            "caught Error: Service call failed: CPU time limit of 50 ms exceeded"
        )
    );
    let after = ingress.get(HOST, "/load/after").await.expect("answered");
    assert_eq!((after.status, after.body), (200, loaded("after")));
}
