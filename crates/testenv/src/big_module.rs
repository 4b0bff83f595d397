//! The one generator of big JavaScript modules, shared by the engine's code
//! cache tests, the e2e bundles and the bundle benchmark: an ES module
//! shaped as a bundler's output is, many module factories of many small
//! functions each, a tenth of them run at load (the app's entry pulling in
//! part of its graph), others only by `fetch`; never one giant string
//! literal, and no scope with hundreds of thousands of declarations (V8
//! cannot enter a function that big: workerd fails such a module with
//! "Maximum call stack size exceeded").

use std::fmt::Write as _;

/// Functions per module factory.
const FUNCTIONS: usize = 100;

/// An ES module of at least `bytes` (at most one factory, about 20 KiB,
/// more) whose default export answers `fetch` with a number its functions
/// compute. `salt` is a comment on its first line: two salts make two
/// sources (two code cache keys, two digests), the same code otherwise. It
/// also exports `total`, which runs a few of the functions.
pub fn es_module(bytes: usize, salt: &str) -> String {
    let mut source = body(bytes, salt);
    source.push_str(
        "export const total = () => load(0).run(3) + load(factories.length - 1).run(3);\n\
         export default { fetch() { return new Response(String(answer())); } };\n",
    );
    source
}

/// The same code as a classic service-worker script (`addEventListener`),
/// which no bundler emits for many modules but old Workers still are.
pub fn service_worker(bytes: usize, salt: &str) -> String {
    let mut source = body(bytes, salt);
    source.push_str(
        "addEventListener('fetch', (event) => event.respondWith(new Response(String(answer()))));\n",
    );
    source
}

/// The factories, the loader, a tenth of the factories loaded, and
/// `answer()`, which `fetch` returns.
fn body(bytes: usize, salt: &str) -> String {
    let mut source = format!("// build {salt}\nconst factories = [];\n");
    let mut factories: usize = 0;
    while source.len() < bytes {
        source.push_str("factories.push((exports) => {\n");
        for i in 0..FUNCTIONS {
            let _ = writeln!(
                source,
                "  function f{i}(x) {{ let s = {i} + {factories}; for (let j = 0; j < x; j++) {{ s = (s * 31 + j) % 1000003; }} \
                 const o = {{ name: 'm{factories}f{i}', value: s, tags: ['a{i}', 'b{i}'] }}; return o.value + o.name.length; }}"
            );
        }
        let all: Vec<String> = (0..FUNCTIONS).map(|i| format!("f{i}")).collect();
        let _ = writeln!(
            source,
            "  exports.table = [{}];\n  exports.run = (x) => f0(x) + f{}(x);\n}});",
            all.join(", "),
            FUNCTIONS / 2
        );
        factories += 1;
    }
    let _ = write!(
        source,
        "const loaded = new Map();\n\
         function load(k) {{ let m = loaded.get(k); if (!m) {{ m = {{}}; loaded.set(k, m); factories[k](m); }} return m; }}\n\
         for (let k = 0; k < factories.length; k += 10) load(k).run(3);\n\
         function answer() {{ let sum = 0; for (let k = 0; k < factories.length; k += 5) sum += load(k).run(2); return sum; }}\n"
    );
    source
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_least_the_size_asked_and_salted() {
        let a = es_module(64 << 10, "a");
        assert!(a.len() >= 64 << 10 && a.len() < (64 << 10) + (32 << 10));
        let b = es_module(64 << 10, "b");
        assert_ne!(a, b);
        assert!(service_worker(64 << 10, "a").contains("addEventListener('fetch'"));
        assert_eq!(
            a.lines().skip(1).collect::<Vec<_>>(),
            b.lines().skip(1).collect::<Vec<_>>()
        );
    }
}
