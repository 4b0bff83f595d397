//! The mutating half of the admission webhook: a Worker this installation
//! serves gets the operator's [`FINALIZER`] as it is created, in the same
//! write as the user's apply. The operator adds it otherwise, in a write
//! of its own (a whole update, validated and watched again) before it
//! writes the Worker's bundles; with the webhook that write is not needed.
//! A Worker of another installation's class is left as it is: a finalizer
//! that no operator of its class would remove would hold its deletion
//! forever.

use isolane_crds::Worker;
use json_patch::{AddOperation, Patch, PatchOperation, jsonptr::PointerBuf};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};

use crate::FINALIZER;
use crate::index::WorkerIndex;

/// The path the mutating webhook is served at (the validating one at any
/// other).
pub const MUTATE_PATH: &str = "/mutate";

/// The answer to a mutating `AdmissionReview` in `body`: always allowed
/// (validation is the other webhook's), with a patch adding the finalizer
/// to a Worker being created without it.
pub fn mutate(body: &[u8], index: &WorkerIndex) -> AdmissionReview<DynamicObject> {
    let request: Result<AdmissionRequest<Worker>, String> =
        serde_json::from_slice::<AdmissionReview<Worker>>(body)
            .map_err(|error| error.to_string())
            .and_then(|review| {
                review
                    .try_into()
                    .map_err(|e: kube::core::admission::ConvertAdmissionReviewError| e.to_string())
            });
    let request = match request {
        Ok(request) => request,
        Err(error) => {
            return AdmissionResponse::invalid(format!("invalid AdmissionReview: {error}"))
                .into_review();
        }
    };
    let response = AdmissionResponse::from(&request);
    let Some(patch) = finalizer_patch(&request, index) else {
        return response.into_review();
    };
    match response.clone().with_patch(patch) {
        Ok(patched) => patched.into_review(),
        // The operator adds the finalizer itself when the webhook does not.
        Err(_) => response.into_review(),
    }
}

/// The patch a Worker being created needs, if any.
fn finalizer_patch(request: &AdmissionRequest<Worker>, index: &WorkerIndex) -> Option<Patch> {
    let worker = request.object.as_ref()?;
    if request.operation != Operation::Create || !index.serves(worker) {
        return None;
    }
    let finalizers = worker.metadata.finalizers.as_deref();
    let (path, value) = match finalizers {
        Some(list) if list.iter().any(|f| f == FINALIZER) => return None,
        Some(_) => (
            PointerBuf::from_tokens(["metadata", "finalizers", "-"]),
            serde_json::Value::from(FINALIZER),
        ),
        None => (
            PointerBuf::from_tokens(["metadata", "finalizers"]),
            serde_json::json!([FINALIZER]),
        ),
    };
    Some(Patch(vec![PatchOperation::Add(AddOperation {
        path,
        value,
    })]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::tests::{body, worker};

    /// The JSON patch of the answer, if any.
    fn patch(review: &AdmissionReview<DynamicObject>) -> Option<serde_json::Value> {
        let response = review.response.as_ref().expect("a response");
        assert!(response.allowed, "the mutating webhook never denies");
        let patch = response.patch.as_ref()?;
        Some(serde_json::from_slice(patch).expect("a JSON patch"))
    }

    #[test]
    fn a_worker_created_without_the_finalizer_gets_it_and_nothing_else_does() {
        let index = WorkerIndex::default();
        let fresh = worker("a", "export default {}", &["a.test"]);
        assert_eq!(
            patch(&mutate(&body("CREATE", &fresh, None), &index)),
            Some(serde_json::json!([
                {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}
            ]))
        );
        let mut other = fresh.clone();
        other.metadata.finalizers = Some(vec!["example.com/keep".into()]);
        assert_eq!(
            patch(&mutate(&body("CREATE", &other, None), &index)),
            Some(serde_json::json!([
                {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER}
            ]))
        );
        let mut ours = fresh.clone();
        ours.metadata.finalizers = Some(vec![FINALIZER.into()]);
        assert_eq!(patch(&mutate(&body("CREATE", &ours, None), &index)), None);
        let update = body("UPDATE", &fresh, Some(&fresh));
        assert_eq!(patch(&mutate(&update, &index)), None);
        let mut staging = fresh.clone();
        staging.spec.worker_class = Some("staging".into());
        assert_eq!(
            patch(&mutate(&body("CREATE", &staging, None), &index)),
            None,
            "another installation's Worker"
        );
    }

    #[test]
    fn a_body_that_is_no_review_is_answered_invalid() {
        let review = mutate(b"{not json", &WorkerIndex::default());
        let response = review.response.expect("a response");
        assert!(!response.allowed);
        assert!(response.result.message.contains("invalid AdmissionReview"));
    }
}
