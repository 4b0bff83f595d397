//! The `isolane` command.
#![forbid(unsafe_code)]

fn main() {
    println!("isolane");
}
