//! `node:crypto`'s finite-field Diffie-Hellman against Node's answers with
//! fixed private keys (`node_dh_cases.mjs`, run in a Worker; Node 20's
//! answers are `node_dh_vectors.json`, written by `node_dh_vectors.mjs`); a
//! Worker generating primes or computing secrets without end meets its CPU
//! limit while a neighbour on the same thread answers.

use crate::node_crypto::{cases_answer_as_node, each_ends_at_the_cpu_limit};

/// Node's answers (see the module docs).
const VECTORS: &str = include_str!("node_dh_vectors.json");

#[tokio::test]
async fn diffie_hellman_answers_as_in_node() {
    cases_answer_as_node(include_str!("node_dh_cases.mjs"), "dhCases", VECTORS).await;
}

/// A prime generation too long for the CPU limit is stopped with the turn;
/// a loop of the costliest secrets (RFC 3526's 8192-bit group) and of
/// parameter checks meets the CPU limit; a neighbour on the same thread
/// answers before, during and after.
#[tokio::test]
async fn endless_diffie_hellman_ends_at_the_cpu_limit() {
    each_ends_at_the_cpu_limit(
        "dh",
        "",
        &[
            "crypto.createDiffieHellman(4096);",
            "for (;;) crypto.createDiffieHellman(512);",
            "const a = crypto.getDiffieHellman('modp18'); const b = crypto.getDiffieHellman('modp18'); b.generateKeys(); for (;;) { a.generateKeys(); a.computeSecret(b.getPublicKey()); }",
            "const p = crypto.getDiffieHellman('modp18').getPrime(); for (;;) crypto.createDiffieHellman(p).verifyError;",
        ],
    )
    .await;
}
