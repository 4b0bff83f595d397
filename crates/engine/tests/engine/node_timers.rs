//! `enable_nodejs_global_timers` (implied by Node.js compatibility from
//! 2026-02-10, workerd's rule): the timer globals are `node:timers`', so
//! `setTimeout(...).unref()` works as Node code expects.

use std::sync::Arc;

use isolane_engine::{Compat, PoolMode, WorkerBundle};

use crate::support::*;

fn dated(id: &str, date: &str, flags: &[&str]) -> Arc<WorkerBundle> {
    let source = "
        import { AsyncLocalStorage } from 'node:async_hooks';
        const als = new AsyncLocalStorage();
        export default { async fetch() {
          const t = setTimeout(() => {}, 50);
          const kind = typeof t + ':' + (typeof t.unref === 'function' ? t.unref().hasRef() : '-');
          clearTimeout(t);
          const fired = await als.run('ctx', () => new Promise((resolve) => {
            const timer = setTimeout((a, b) => resolve(a + b + als.getStore()), 1, 'x', 'y');
            if (typeof timer === 'object') timer.refresh();
          }));
          let ticks = 0;
          await new Promise((resolve) => { const i = setInterval(() => { if (++ticks === 3) { clearInterval(i); resolve(); } }, 1); });
          const numeric = Number(setTimeout(() => {}, 10)) > 0;
          return new Response([kind, fired, ticks, numeric].join(' '));
        } };";
    let mut worker = (*bundle(id, source)).clone();
    let flags: Vec<String> = flags.iter().map(|f| (*f).to_owned()).collect();
    worker.compat = Compat::from_settings(Some(date), &flags).unwrap();
    Arc::new(worker)
}

#[tokio::test]
async fn timer_globals_are_nodes_from_2026_02_10_and_webs_before() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let cases = [
        (
            "2026-02-10",
            &["nodejs_compat"][..],
            "object:false xyctx 3 true",
        ),
        ("2026-11-01", &[][..], "object:false xyctx 3 true"),
        (
            "2026-02-09",
            &["nodejs_compat"][..],
            "number:- xyctx 3 true",
        ),
        (
            "2026-11-01",
            &["no_nodejs_global_timers"][..],
            "number:- xyctx 3 true",
        ),
        (
            "2025-01-01",
            &["nodejs_compat", "enable_nodejs_global_timers"][..],
            "object:false xyctx 3 true",
        ),
    ];
    for (i, (date, flags, expected)) in cases.into_iter().enumerate() {
        let worker = dated(&format!("t/timers{i}"), date, flags);
        let (status, body) = run(&engine, 0, &worker, "/").await;
        assert_eq!((status, body.as_str()), (200, expected), "{date} {flags:?}");
    }
}
