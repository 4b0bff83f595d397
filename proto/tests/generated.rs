//! The committed generated code must be exactly what the `.proto` files
//! generate today.

#[path = "../codegen.rs"]
#[allow(dead_code)] // Shared with the other user, which needs other items.
mod codegen;

#[test]
fn committed_code_matches_the_protos() {
    let fresh = tempfile::tempdir().unwrap();
    codegen::generate(fresh.path()).unwrap();
    let mut generated: Vec<_> = std::fs::read_dir(fresh.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    generated.sort();
    assert!(!generated.is_empty(), "protoc generated nothing");
    let mut committed: Vec<_> = std::fs::read_dir(codegen::committed_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    committed.sort();
    assert_eq!(
        committed,
        generated,
        "src/gen/ has other files than protoc generates: run `{}`",
        codegen::REGENERATE
    );
    for name in generated {
        let want = std::fs::read_to_string(fresh.path().join(&name)).unwrap();
        let have = std::fs::read_to_string(codegen::committed_dir().join(&name)).unwrap();
        assert!(
            want == have,
            "src/gen/{} is stale: run `{}`",
            name.to_string_lossy(),
            codegen::REGENERATE
        );
    }
}
