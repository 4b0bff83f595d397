//! What an idle isolate's V8 heap is made of: an isolate and context made
//! from the snapshot as `WorkerIsolate::create` makes them, its heap spaces,
//! and a heap snapshot summed by node type and by the largest names. Run by
//! hand (docs/benchmark-history.md, section 5):
//!
//! ```text
//! hack/cargo.sh test -p isolane-engine --lib idle_heap_breakdown -- --ignored --nocapture
//! ```

use std::collections::HashMap;

/// One line per heap space: name, used KiB, committed KiB.
fn spaces(isolate: &mut v8::Isolate) -> Vec<(String, usize, usize)> {
    (0..isolate.number_of_heap_spaces())
        .filter_map(|i| isolate.get_heap_space_statistics(i))
        .map(|s| {
            (
                s.space_name().to_string_lossy().into_owned(),
                s.space_used_size() / 1024,
                s.space_size() / 1024,
            )
        })
        .collect()
}

/// (what, KiB or bytes, count) rows.
type Groups = Vec<(String, usize, usize)>;

/// Self sizes of a heap snapshot (V8's JSON format) by node type, and the
/// `top` largest (type, name) groups.
fn snapshot_summary(json: &[u8], top: usize) -> (Groups, Groups) {
    let doc: serde_json::Value = serde_json::from_slice(json).unwrap_or_default();
    let meta = &doc["snapshot"]["meta"];
    let fields: Vec<&str> = meta["node_fields"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f.as_str()).collect())
        .unwrap_or_default();
    let types: Vec<&str> = meta["node_types"][0]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f.as_str()).collect())
        .unwrap_or_default();
    let strings: Vec<&str> = doc["strings"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f.as_str()).collect())
        .unwrap_or_default();
    let nodes: Vec<u64> = doc["nodes"]
        .as_array()
        .map(|a| a.iter().filter_map(|n| n.as_u64()).collect())
        .unwrap_or_default();
    let at = |name: &str| fields.iter().position(|f| *f == name).unwrap_or(0);
    let (t, n, s) = (at("type"), at("name"), at("self_size"));
    let mut by_type: HashMap<String, (usize, usize)> = HashMap::new();
    let mut by_name: HashMap<String, (usize, usize)> = HashMap::new();
    for node in nodes.chunks(fields.len().max(1)) {
        let kind = types.get(node[t] as usize).copied().unwrap_or("?");
        let name = strings.get(node[n] as usize).copied().unwrap_or("?");
        let size = node[s] as usize;
        let e = by_type.entry(kind.to_owned()).or_default();
        e.0 += size;
        e.1 += 1;
        let short: String = name.chars().take(60).collect();
        let e = by_name.entry(format!("{kind} {short}")).or_default();
        e.0 += size;
        e.1 += 1;
    }
    let sorted = |map: HashMap<String, (usize, usize)>, top: usize| {
        let mut v: Vec<_> = map.into_iter().map(|(k, (s, c))| (k, s, c)).collect();
        v.sort_by_key(|row| std::cmp::Reverse(row.1));
        v.truncate(top);
        v
    };
    (sorted(by_type, usize::MAX), sorted(by_name, top))
}

fn print_spaces(title: &str, isolate: &mut v8::Isolate) {
    let stats = isolate.get_heap_statistics();
    println!(
        "== {title}: used {} KiB, total {} KiB, physical {} KiB, external {} KiB",
        stats.used_heap_size() / 1024,
        stats.total_heap_size() / 1024,
        stats.total_physical_size() / 1024,
        stats.external_memory() / 1024,
    );
    for (name, used, size) in spaces(isolate) {
        if size > 0 || used > 0 {
            println!("   {name:<24} used {used:>6} KiB  committed {size:>6} KiB");
        }
    }
    if let Some(code) = isolate.get_heap_code_and_metadata_statistics() {
        println!(
            "   code+metadata {} KiB, bytecode+metadata {} KiB, external script source {} KiB",
            code.code_and_metadata_size() / 1024,
            code.bytecode_and_metadata_size() / 1024,
            code.external_script_source_size() / 1024,
        );
    }
}

/// A heap snapshot of `isolate` by node type, and its `top` largest
/// (type, name) groups.
fn print_snapshot(isolate: &mut v8::Isolate, top: usize) {
    let mut json = Vec::new();
    isolate.take_heap_snapshot(|chunk| {
        json.extend_from_slice(chunk);
        true
    });
    let (by_type, by_name) = snapshot_summary(&json, top);
    println!("== heap snapshot by node type (self sizes)");
    for (kind, size, count) in by_type {
        println!("   {kind:<16} {:>6} KiB  {count:>6} nodes", size / 1024);
    }
    if top > 0 {
        println!("== largest (type, name) groups");
    }
    for (name, size, count) in by_name {
        println!("   {:>6} KiB {count:>6}  {name}", size / 1024);
    }
}

#[test]
#[ignore = "prints a measurement; run by hand"]
fn idle_heap_breakdown() {
    crate::platform::init();
    let blob = crate::snapshot::blob(None).unwrap();
    // A bare V8 isolate with V8's own snapshot and one context: the floor.
    {
        let mut bare = v8::Isolate::new(v8::CreateParams::default());
        let context = {
            v8::scope!(let scope, &mut bare);
            let context = v8::Context::new(scope, Default::default());
            v8::Global::new(scope, context)
        };
        bare.low_memory_notification();
        print_spaces("V8 alone, one context", &mut bare);
        print_snapshot(&mut bare, 0);
        drop(context);
    }
    let params = v8::CreateParams::default()
        .snapshot_blob(v8::StartupData::from(blob))
        .external_references(crate::snapshot::external_references().into());
    let mut isolate = v8::Isolate::new(params);
    print_spaces("runtime snapshot, isolate only", &mut isolate);
    let globals = super::init_context(&mut isolate).unwrap();
    print_spaces("runtime snapshot, context made (as a spare)", &mut isolate);
    isolate.low_memory_notification();
    print_spaces("... after a full GC", &mut isolate);
    print_snapshot(&mut isolate, 40);
    drop(globals);
}

/// Bytes malloc has handed out (V8's C++ objects, not its heap pages).
fn malloc_kib() -> usize {
    // SAFETY: mallinfo2 reads the allocator's counters.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) / 1024
}

fn rss_kib() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
#[ignore = "prints a measurement; run by hand"]
fn idle_rss_per_context_and_after_low_memory_notifications() {
    const N: usize = 200;
    crate::platform::init();
    let blob = crate::snapshot::blob(None).unwrap();
    let before = rss_kib();
    let malloc_before = malloc_kib();
    let mut isolates = Vec::new();
    for _ in 0..N {
        let params = v8::CreateParams::default()
            .snapshot_blob(v8::StartupData::from(blob))
            .external_references(crate::snapshot::external_references().into());
        let mut isolate = v8::Isolate::new(params);
        let globals = super::init_context(&mut isolate).unwrap();
        // SAFETY: entered by `Isolate::new` on this thread; see isolate.rs.
        unsafe { isolate.exit() };
        isolates.push((globals, isolate));
    }
    let made = rss_kib();
    println!(
        "{N} contexts: {} KiB RSS each, {} KiB of it malloc",
        (made - before) / N,
        (malloc_kib() - malloc_before) / N
    );
    each_entered(&mut isolates, |isolate| isolate.low_memory_notification());
    let trimmed = rss_kib();
    println!(
        "after LowMemoryNotification in each: {} KiB RSS each",
        (trimmed.saturating_sub(before)) / N
    );
    each_entered(&mut isolates, |isolate| {
        isolate.memory_pressure_notification(v8::MemoryPressureLevel::Critical)
    });
    println!(
        "after a critical MemoryPressureNotification in each: {} KiB RSS each",
        (rss_kib().saturating_sub(before)) / N
    );
    std::thread::sleep(std::time::Duration::from_secs(3));
    println!(
        "3 s later: {} KiB RSS each",
        (rss_kib().saturating_sub(before)) / N
    );
    for (globals, isolate) in isolates.drain(..).rev() {
        unsafe { isolate.enter() };
        drop(globals);
        drop(isolate);
    }
    // V8 alone, for the floor (after ours: freed memory is reused).
    bare_v8_floor(N);
}

/// Runs `f` in each isolate of `isolates`, entering and exiting it.
fn each_entered<T>(isolates: &mut [(T, v8::OwnedIsolate)], f: impl Fn(&mut v8::OwnedIsolate)) {
    for (_, isolate) in isolates {
        // SAFETY: made and exited on this thread; exited again at once.
        unsafe { isolate.enter() };
        f(isolate);
        unsafe { isolate.exit() };
    }
}

/// Prints what `n` bare V8 isolates with one context each cost.
fn bare_v8_floor(n: usize) {
    let before = rss_kib();
    let malloc_before = malloc_kib();
    let mut bare = Vec::new();
    for _ in 0..n {
        let mut isolate = v8::Isolate::new(v8::CreateParams::default());
        let context = {
            v8::scope!(let scope, &mut isolate);
            let context = v8::Context::new(scope, Default::default());
            v8::Global::new(scope, context)
        };
        // SAFETY: entered by `Isolate::new` on this thread; see isolate.rs.
        unsafe { isolate.exit() };
        bare.push((context, isolate));
    }
    println!(
        "{n} bare V8 isolates with a context: {} KiB RSS each, {} KiB of it malloc",
        (rss_kib() - before) / n,
        (malloc_kib() - malloc_before) / n
    );
    for (context, isolate) in bare.drain(..).rev() {
        unsafe { isolate.enter() };
        drop(context);
        drop(isolate);
    }
}
