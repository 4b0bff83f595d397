//! Regenerates `proto/src/gen/` from the `.proto` files:
//!
//! ```text
//! cargo run -p isolane-proto --example protogen
//! ```

#[path = "../codegen.rs"]
#[allow(dead_code)] // Shared with the other user, which needs other items.
mod codegen;

fn main() -> std::io::Result<()> {
    let dir = codegen::committed_dir();
    std::fs::create_dir_all(&dir)?;
    codegen::generate(&dir)?;
    println!("wrote {}", dir.display());
    Ok(())
}
