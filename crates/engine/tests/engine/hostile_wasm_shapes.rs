//! Generated WebAssembly against a small memory limit: modules of random
//! shapes (tables declared and grown, memories declared and grown, WasmGC
//! arrays made and kept, in loops and straight lines), each run under a
//! 16 MiB limit beside a benign neighbour of another namespace on the same
//! thread. None may take the process past its bound, and every request
//! ends as Wasm says or at the limit.

use isolane_engine::{ExecuteError, PoolMode};

use crate::hostile_wasm_tables::wasm_worker;
use crate::peak_rss::PeakRss;
use crate::peak_rss::rss_mib;
use crate::support::*;

/// Modules generated (each a new Worker, so a new isolate).
const MODULES: u64 = 40;

/// The limit each runs under.
const LIMIT_MIB: u32 = 16;

/// xorshift64*: the same modules on every run; the seed of a failing one is
/// in the assertion's message.
struct Shapes(u64);

impl Shapes {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One of `choices`.
    fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[usize::try_from(self.below(choices.len() as u64)).unwrap()]
    }

    /// Sizes spread over orders of magnitude, up to `most`.
    fn size(&mut self, most: u64) -> u64 {
        let digits = self.below(most.ilog10() as u64 + 1);
        (self.below(10u64.pow(u32::try_from(digits).unwrap()) * 10) + 1).min(most)
    }
}

/// One module: its text.
fn module(shapes: &mut Shapes) -> String {
    let mut text = String::from(
        "(module\n(type $bytes (array (mut i8)))\n(type $longs (array (mut i64)))\n\
         (type $keep (array (mut anyref)))\n",
    );
    let tables = shapes.below(6);
    for t in 0..tables {
        let initial = shapes.size(2_000_000);
        let maximum = if shapes.below(2) == 0 {
            format!(" {}", initial + shapes.size(10_000_000))
        } else {
            String::new()
        };
        text.push_str(&format!("(table $t{t} {initial}{maximum} funcref)\n"));
    }
    let memory = shapes.size(300);
    text.push_str(&format!("(memory {memory})\n"));
    if shapes.below(3) == 0 {
        let length = shapes.size(50_000_000);
        text.push_str(&format!(
            "(global $big (ref $bytes) (array.new_default $bytes (i32.const {length})))\n"
        ));
    }
    text.push_str("(global $kept (mut anyref) (ref.null any))\n");
    text.push_str("(func (export \"run\") (result i32)\n(local $i i32)\n(loop $again\n");
    for _ in 0..1 + shapes.below(6) {
        text.push_str(&step(shapes, tables));
    }
    let rounds = shapes.size(1000);
    text.push_str(&format!(
        "(local.set $i (i32.add (local.get $i) (i32.const 1)))\n\
         (br_if $again (i32.lt_u (local.get $i) (i32.const {rounds}))))\n(local.get $i))\n)"
    ));
    text
}

/// One allocating instruction of the loop's body.
fn step(shapes: &mut Shapes, tables: u64) -> String {
    match shapes.below(5) {
        0 if tables > 0 => format!(
            "(drop (table.grow $t{} (ref.null func) (i32.const {})))\n",
            shapes.below(tables),
            shapes.size(10_000_000)
        ),
        1 => format!("(drop (memory.grow (i32.const {})))\n", shapes.size(2000)),
        2 => {
            let (ty, most) = shapes.pick(&[("$bytes", 1_073_740_800), ("$longs", 134_217_600)]);
            format!(
                "(global.set $kept (array.new_default {ty} (i32.const {})))\n",
                shapes.size(most)
            )
        }
        3 => format!(
            "(global.set $kept (array.new $keep (global.get $kept) (i32.const {})))\n",
            shapes.size(20_000_000)
        ),
        _ => format!(
            "(memory.fill (i32.const 0) (i32.const 7) (i32.const {}))\n",
            shapes.size(65_536)
        ),
    }
}

/// Every generated module ends as Wasm says (200: its grows refused past
/// their maxima, or a trap) or at its memory limit, never past the bound,
/// and the neighbour answers after each.
#[tokio::test]
async fn generated_modules_stay_within_their_memory_limit() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let before = rss_mib();
    let sampler = PeakRss::start();
    let mut outcomes = std::collections::BTreeMap::<&str, usize>::new();
    for seed in 1..=MODULES {
        let mut shapes = Shapes(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let text = module(&mut shapes);
        let wasm = wat::parse_str(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let hog = wasm_worker(&format!("t/shape{seed}"), wasm, LIMIT_MIB);
        let result = engine.execute(0, hog, get("/")).await;
        let outcome = match &result {
            Ok(response) if response.status() == 200 => "answered",
            Err(ExecuteError::MemoryLimit { .. }) => "memory_limit",
            // A trap: an array longer than V8 makes, a table past its size.
            Err(ExecuteError::Exception { .. }) => "trapped",
            other => panic!(
                "seed {seed}: {:?}\n{text}",
                other.as_ref().map(|r| r.status())
            ),
        };
        *outcomes.entry(outcome).or_default() += 1;
        let now = rss_mib();
        assert!(
            now < before + 2 * u64::from(LIMIT_MIB) + 64,
            "seed {seed}: RSS {before} -> {now} MiB\n{text}"
        );
        neighbour_ok(&engine, &neighbour).await;
    }
    let peak = sampler.finish();
    eprintln!("{MODULES} modules: {outcomes:?}; RSS MiB before {before}, peak {peak}");
    // One 16 MiB isolate at a time, each discarded at its limit, and what
    // V8 keeps between them: never hundreds of MiB.
    assert!(
        peak < before + 2 * u64::from(LIMIT_MIB) + 64,
        "RSS {before} -> {peak} MiB"
    );
    assert!(
        outcomes.get("memory_limit").copied().unwrap_or(0) > 0,
        "no generated module reached its limit: {outcomes:?}"
    );
}
