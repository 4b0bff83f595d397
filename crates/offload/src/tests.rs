//! The pool's admission order, step by step: each test holds permits, drops
//! them one at a time and checks which waiting job was admitted.

use std::future::Future;
use std::pin::Pin;

use futures::FutureExt;

use super::{Permit, Pool, Tenant};

type Waiting = Pin<Box<dyn Future<Output = Permit>>>;

/// A job of `worker_id` asking for a slot.
fn ask(pool: &Pool, worker_id: &str) -> Waiting {
    let pool = pool.clone();
    let tenant = Tenant::of(worker_id);
    Box::pin(async move { pool.admit(&tenant).await })
}

/// A job that must be admitted at once.
fn run(pool: &Pool, worker_id: &str) -> Permit {
    ask(pool, worker_id)
        .now_or_never()
        .unwrap_or_else(|| panic!("{worker_id} was not admitted at once"))
}

/// The labels of the waiting jobs admitted now (their permits kept).
fn admitted(
    waiting: &mut Vec<(String, Waiting)>,
    running: &mut Vec<(String, Permit)>,
) -> Vec<String> {
    let mut now = Vec::new();
    waiting.retain_mut(|(label, job)| match job.as_mut().now_or_never() {
        Some(permit) => {
            now.push(label.clone());
            running.push((label.clone(), permit));
            false
        }
        None => true,
    });
    now
}

/// Frees the oldest running job's slot, one at a time, and returns the
/// order in which the waiting jobs were admitted.
fn admission_order(
    mut waiting: Vec<(String, Waiting)>,
    mut running: Vec<(String, Permit)>,
) -> Vec<String> {
    let mut order = Vec::new();
    assert!(admitted(&mut waiting, &mut running).is_empty());
    while !running.is_empty() {
        running.remove(0);
        let now = admitted(&mut waiting, &mut running);
        assert!(now.len() <= 1, "one freed slot admitted {now:?}");
        order.extend(now);
    }
    assert!(waiting.is_empty(), "never admitted: {}", waiting.len());
    order
}

fn jobs(pool: &Pool, list: &[(&str, &str)]) -> Vec<(String, Waiting)> {
    list.iter()
        .map(|(label, worker)| ((*label).to_owned(), ask(pool, worker)))
        .collect()
}

#[test]
fn a_flooding_namespace_leaves_a_slot_for_another() {
    let pool = Pool::new(2, 1);
    let flood: Vec<_> = (0..6)
        .map(|i| ask(&pool, &format!("attacker/w{i}")))
        .collect();
    let mut flood: Vec<_> = flood
        .into_iter()
        .enumerate()
        .map(|(i, job)| (format!("a{i}"), job))
        .collect();
    let mut running = Vec::new();
    assert_eq!(admitted(&mut flood, &mut running), ["a0"]);
    assert_eq!(pool.load("attacker"), (1, 5));
    // The victim's job starts at once, ahead of the five waiting.
    let victim = run(&pool, "victim/pbkdf2");
    assert_eq!(pool.load("victim"), (1, 0));
    drop(victim);
    assert_eq!(pool.load("victim"), (0, 0));
    // Its slot does not go to the flood.
    assert!(admitted(&mut flood, &mut running).is_empty());
    assert_eq!(pool.load("attacker"), (1, 5));
}

#[test]
fn a_namespace_holds_at_most_its_share() {
    let pool = Pool::new(4, 2);
    let mut a = jobs(
        &pool,
        &[("a0", "a/w"), ("a1", "a/w"), ("a2", "a/x"), ("a3", "a/y")],
    );
    let mut running = Vec::new();
    assert_eq!(admitted(&mut a, &mut running), ["a0", "a1"]);
    let b = [run(&pool, "b/w"), run(&pool, "b/w")];
    let mut c = jobs(&pool, &[("c0", "c/w")]);
    assert!(
        admitted(&mut c, &mut running).is_empty(),
        "the pool is full"
    );
    assert_eq!((pool.load("a"), pool.load("b")), ((2, 2), (2, 0)));
    // Two slots free up: `a` is at its share, so only `c` takes one.
    drop(b);
    let mut waiting: Vec<_> = a.into_iter().chain(c).collect();
    assert_eq!(admitted(&mut waiting, &mut running), ["c0"]);
    assert_eq!(pool.load("a"), (2, 2));
}

#[test]
fn waiting_namespaces_take_turns() {
    let pool = Pool::new(1, 1);
    let first = run(&pool, "a/w0");
    let waiting = jobs(
        &pool,
        &[
            ("a1", "a/w1"),
            ("a2", "a/w2"),
            ("a3", "a/w3"),
            ("b1", "b/w"),
            ("c1", "c/w"),
        ],
    );
    let order = admission_order(waiting, vec![("a0".to_owned(), first)]);
    // First come first served would be a1 a2 a3 b1 c1: b1 would wait
    // behind the whole flood.
    assert_eq!(order, ["a1", "b1", "c1", "a2", "a3"]);
}

#[test]
fn workers_of_a_namespace_take_turns() {
    let pool = Pool::new(1, 1);
    let first = run(&pool, "other/w");
    let waiting = jobs(
        &pool,
        &[
            ("w1a", "ns/w1"),
            ("w1b", "ns/w1"),
            ("w1c", "ns/w1"),
            ("w2a", "ns/w2"),
        ],
    );
    let order = admission_order(waiting, vec![("first".to_owned(), first)]);
    assert_eq!(order, ["w1a", "w2a", "w1b", "w1c"]);
}

#[test]
fn a_job_that_stopped_waiting_takes_no_slot() {
    let pool = Pool::new(1, 1);
    let first = run(&pool, "a/w");
    let mut waiting = jobs(&pool, &[("gone", "a/x"), ("b", "b/w")]);
    let mut running = Vec::new();
    assert!(admitted(&mut waiting, &mut running).is_empty());
    drop(waiting.remove(0));
    drop(first);
    assert_eq!(admitted(&mut waiting, &mut running), ["b"]);
    assert_eq!((pool.load("a"), pool.load("b")), ((0, 0), (1, 0)));
    running.clear();
    // Nothing is left behind: the next job starts at once.
    drop(run(&pool, "a/w"));
}

#[test]
fn tenants_are_namespace_then_worker() {
    assert_eq!(
        Tenant::of("ns/name"),
        Tenant {
            namespace: "ns".into(),
            worker: "name".into()
        }
    );
    assert_eq!(Tenant::of("dev/a/b").worker.as_ref(), "a/b");
    assert_eq!(Tenant::of("solo").namespace.as_ref(), "solo");
}
