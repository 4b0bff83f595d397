//! Bundles named by digest (`spec.bundle`): the credentials of the
//! Worker's pull secrets, and the bundle pulled and checked (it unpacks
//! within the limits, its main module parses, its Wasm validates) before a
//! revision of it is written, so a broken bundle never takes traffic and
//! the Worker says why.
//!
//! The credentials travel to the nodes inside the bundle Secret in the
//! operator's namespace, as resolved env secrets do: nodes read no Secret
//! outside their own namespace.
//!
//! A bundle's content is fixed by its digest, so a verdict is remembered
//! per reference and credentials (a bounded number of them); a refusal that
//! may pass later (unauthorized, not found, registry down) is not.

use std::collections::HashMap;
use std::sync::Mutex;

use isolane_artifact::{
    AllowedRegistries, ArtifactLimits, BundleRef, Credentials, Registry, RegistryCa, check_wasm,
};
use isolane_crds::WorkerSpec;
use isolane_worker::ArtifactSource;
use isolane_worker::ModuleKind;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};

use crate::status::reason;
use crate::{lock, script};

/// Verdicts kept; past this, the memory is cleared.
const REMEMBERED: usize = 1024;

/// A bundle reference and the credentials (user, password) it was pulled with.
type VerdictKey = (String, Option<(String, String)>);

/// What the operator made of a Worker's `spec.bundle`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArtifactCheck {
    /// Pulled and checked: what the bundle Secret carries.
    Valid(ArtifactSource),
    /// Why not, as a condition reason and message.
    Refused {
        reason: &'static str,
        message: String,
    },
}

/// Pulls and checks bundles for the reconciles.
pub struct ArtifactChecker {
    registry: Registry,
    verdicts: Mutex<HashMap<VerdictKey, ArtifactCheck>>,
}

impl std::fmt::Debug for ArtifactChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactChecker").finish_non_exhaustive()
    }
}

impl ArtifactChecker {
    /// A checker reaching `plain_http` registries over HTTP, others over
    /// HTTPS (trusting `ca` besides the public web PKI), and only `allowed`
    /// ones.
    pub fn new(
        plain_http: Vec<String>,
        allowed: AllowedRegistries,
        ca: Option<RegistryCa>,
    ) -> Result<Self, isolane_artifact::Error> {
        let mut registry = Registry::new(plain_http, allowed, ArtifactLimits::default())?;
        if let Some(ca) = ca {
            registry = registry.trusting(ca)?;
        }
        Ok(Self {
            registry,
            verdicts: Mutex::new(HashMap::new()),
        })
    }

    /// The verdict on `spec.bundle` of a Worker in `namespace` (`None`
    /// without one). Reading a pull secret that fails is an error (retried).
    pub async fn check(
        &self,
        client: &Client,
        namespace: &str,
        spec: &WorkerSpec,
    ) -> Result<Option<ArtifactCheck>, crate::Error> {
        let Some(reference) = &spec.bundle else {
            return Ok(None);
        };
        let bundle: BundleRef = match reference.parse() {
            Ok(bundle) => bundle,
            Err(error) => return Ok(Some(refused(&error))),
        };
        let credentials = match pull_credentials(client, namespace, spec, bundle.registry()).await?
        {
            Ok(credentials) => credentials,
            Err(refusal) => return Ok(Some(refusal)),
        };
        let key = (
            bundle.to_string(),
            credentials
                .as_ref()
                .map(|c| (c.username.clone(), c.password.clone())),
        );
        if let Some(verdict) = lock(&self.verdicts).get(&key) {
            return Ok(Some(verdict.clone()));
        }
        let verdict = match self
            .registry
            .pull(&bundle, credentials.as_ref(), None)
            .await
        {
            Ok(pulled) => match check_modules(&bundle, &pulled.modules)
                .and_then(|()| check_assets(&bundle, pulled.assets.as_ref()))
            {
                Ok(()) => ArtifactCheck::Valid(ArtifactSource {
                    reference: bundle.to_string(),
                    username: credentials.as_ref().map(|c| c.username.clone()),
                    password: credentials.as_ref().map(|c| c.password.clone()),
                }),
                Err(verdict) => verdict,
            },
            Err(error) => {
                tracing::warn!(bundle = %bundle, reason = error.kind(), %error, "bundle refused");
                let verdict = refused(&error);
                if !permanent(&error) {
                    return Ok(Some(verdict));
                }
                verdict
            }
        };
        let mut verdicts = lock(&self.verdicts);
        if verdicts.len() >= REMEMBERED {
            verdicts.clear();
        }
        verdicts.insert(key, verdict.clone());
        Ok(Some(verdict))
    }
}

/// The credentials of the first pull secret with an entry for `registry`
/// (none without one), or the refusal when a named secret is missing.
async fn pull_credentials(
    client: &Client,
    namespace: &str,
    spec: &WorkerSpec,
    registry: &str,
) -> Result<Result<Option<Credentials>, ArtifactCheck>, crate::Error> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    for pull_secret in &spec.bundle_pull_secrets {
        let secret =
            api.get_opt(&pull_secret.name)
                .await
                .map_err(|source| crate::Error::GetReference {
                    kind: "Secret",
                    namespace: namespace.to_owned(),
                    name: pull_secret.name.clone(),
                    source: Box::new(source),
                })?;
        let Some(secret) = secret else {
            return Ok(Err(ArtifactCheck::Refused {
                reason: reason::REFERENCE_NOT_FOUND,
                message: format!("pull secret {namespace}/{} not found", pull_secret.name),
            }));
        };
        let json = secret
            .data
            .as_ref()
            .and_then(|data| data.get(".dockerconfigjson"))
            .map(|json| json.0.as_slice())
            .unwrap_or_default();
        if let Some(found) = Credentials::from_docker_config(json, registry) {
            return Ok(Ok(Some(found)));
        }
    }
    Ok(Ok(None))
}

/// The main module parses as a module; the Wasm validates.
fn check_modules(
    bundle: &BundleRef,
    modules: &isolane_worker::Modules,
) -> Result<(), ArtifactCheck> {
    let main = modules.main();
    if main.kind == ModuleKind::ESModule
        && let Err(syntax) = script::check(main.text().unwrap_or_default())
    {
        return Err(ArtifactCheck::Refused {
            reason: reason::SYNTAX_ERROR,
            message: format!(
                "the bundle's main module {:?} does not parse: {syntax}",
                main.name
            ),
        });
    }
    check_wasm(&bundle.to_string(), modules).map_err(|error| refused(&error))
}

/// The artifact's static assets make a site the node can serve.
fn check_assets(
    bundle: &BundleRef,
    assets: Option<&isolane_assets::AssetFiles>,
) -> Result<(), ArtifactCheck> {
    let Some(files) = assets else {
        return Ok(());
    };
    isolane_artifact::assets_layer::site(&bundle.to_string(), files, (None, &[]))
        .map(drop)
        .map_err(|error| refused(&error))
}

fn refused(error: &isolane_artifact::Error) -> ArtifactCheck {
    ArtifactCheck::Refused {
        reason: reason::BUNDLE_INVALID,
        message: format!("the bundle is refused ({}): {error}", error.kind()),
    }
}

/// Whether the refusal holds for good (the digest fixes the content).
fn permanent(error: &isolane_artifact::Error) -> bool {
    matches!(
        error,
        isolane_artifact::Error::TooLarge { .. }
            | isolane_artifact::Error::DigestMismatch { .. }
            | isolane_artifact::Error::SizeMismatch { .. }
            | isolane_artifact::Error::Malformed { .. }
            | isolane_artifact::Error::BadReference { .. }
            | isolane_artifact::Error::RegistryNotAllowed { .. }
    )
}
