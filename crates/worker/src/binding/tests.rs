use super::*;

#[test]
fn names_are_identifiers_unique_across_env_and_bindings() {
    let ok = [Binding::kv("KV", "cache"), Binding::kv("_b2", "a.b-c_d")];
    assert_eq!(check(["API_KEY"], &ok), Ok(()));
    for bad in ["2KV", "my-kv", "", "a b", "ü"] {
        assert_eq!(
            check([], &[Binding::kv(bad, "x")]),
            Err(BindingError::InvalidName { name: bad.into() })
        );
    }
    assert_eq!(
        check(["KV"], &[Binding::kv("KV", "x")]),
        Err(BindingError::Duplicate { name: "KV".into() })
    );
    assert_eq!(
        check([], &[Binding::kv("A", "x"), Binding::kv("A", "y")]),
        Err(BindingError::Duplicate { name: "A".into() })
    );
}

#[test]
fn namespace_names_and_kinds_are_checked() {
    for bad in ["", "-x", ".x", "a/b", "a b", &"n".repeat(64)] {
        let error = check([], &[Binding::kv("KV", bad)]).unwrap_err();
        assert!(
            matches!(error, BindingError::InvalidNamespace { .. }),
            "{bad}"
        );
    }
    assert!(is_kv_namespace(&"n".repeat(63)));
    let none = Binding {
        name: "DO".into(),
        kv_namespace: None,
        durable_object: None,
        service: None,
        dispatch_namespace: None,
        queue: None,
        d1: None,
        images: None,
        worker_loader: None,
        r2_bucket: None,
        workflow: None,
    };
    let error = check([], &[none]).unwrap_err();
    assert_eq!(error, BindingError::Kind { name: "DO".into() });
}

#[test]
fn durable_object_bindings_name_a_class_of_this_worker() {
    assert_eq!(
        check([], &[Binding::durable_object("COUNTER", "Counter")]),
        Ok(())
    );
    let error = check([], &[Binding::durable_object("C", "my-class")]).unwrap_err();
    assert!(
        matches!(error, BindingError::InvalidClass { .. }),
        "{error}"
    );
    let hosted_by = |worker: &str| {
        check(
            [],
            &[Binding::hosted_durable_object("C", "Counter", worker)],
        )
    };
    for good in ["host", "my-host.v2", "a", &"h".repeat(63)] {
        assert_eq!(hosted_by(good), Ok(()), "{good}");
    }
    // A name only: another namespace (`ns/host`) cannot be named.
    for bad in [
        "team-b/host",
        "Host",
        "-host",
        "host-",
        "a..b",
        "",
        "h ost",
        &"h".repeat(254),
    ] {
        let error = hosted_by(bad).unwrap_err();
        assert!(
            matches!(error, BindingError::InvalidWorker { .. }),
            "{bad}: {error}"
        );
    }
}

#[test]
fn sqlite_is_the_hosting_worker_s_choice_and_a_binding_has_one_kind() {
    assert_eq!(
        check([], &[Binding::sqlite_durable_object("C", "Chat")]),
        Ok(())
    );
    // SQLite is the hosting Worker's choice, never a caller's.
    let mut hosted = Binding::hosted_durable_object("C", "Chat", "host");
    if let Some(object) = &mut hosted.durable_object {
        object.sqlite = true;
    }
    let error = check([], &[hosted]).unwrap_err();
    assert!(
        matches!(error, BindingError::SqliteHosted { .. }),
        "{error}"
    );
    let json = serde_json::to_value(Binding::durable_object("C", "Counter")).unwrap();
    assert_eq!(
        json["durableObject"],
        serde_json::json!({"className": "Counter"}),
        "not sqlite: written as before"
    );
    let mut both = Binding::durable_object("C", "Counter");
    both.kv_namespace = Some("x".into());
    assert_eq!(
        check([], &[both]),
        Err(BindingError::Kind { name: "C".into() })
    );
}

#[test]
fn service_bindings_name_a_worker_of_this_namespace() {
    let ok = [
        Binding::service("AUTH", "auth", None),
        Binding::service("ADMIN", "auth.v2", Some("Admin")),
        // A Worker that does not exist yet is admitted.
        Binding::service("LATER", "not-yet", None),
    ];
    assert_eq!(check([], &ok), Ok(()));
    let error = check([], &[Binding::service("AUTH", "team-b/auth", None)]).unwrap_err();
    assert_eq!(
        error,
        BindingError::OtherNamespace {
            name: "AUTH".into(),
            worker: "team-b/auth".into()
        }
    );
    assert!(
        error.to_string().contains("names another namespace"),
        "{error}"
    );
    for bad in ["Auth", "", "-a", "a b"] {
        let error = check([], &[Binding::service("S", bad, None)]).unwrap_err();
        assert!(
            matches!(error, BindingError::InvalidService { .. }),
            "{bad}"
        );
    }
    let error = check([], &[Binding::service("S", "auth", Some("my-class"))]).unwrap_err();
    assert!(
        matches!(error, BindingError::InvalidClass { .. }),
        "{error}"
    );
    let with_props = |text: String| {
        let mut binding = Binding::service("S", "auth", None);
        if let Some(service) = &mut binding.service {
            service.props = Some(serde_json::from_str(&text).unwrap());
        }
        binding
    };
    assert_eq!(
        check([], &[with_props(r#"{"role":"admin"}"#.into())]),
        Ok(())
    );
    let big = format!(r#"{{"k":"{}"}}"#, "x".repeat(MAX_PROPS_BYTES));
    assert_eq!(
        check([], &[with_props(big)]),
        Err(BindingError::PropsTooLarge {
            name: "S".into(),
            bytes: MAX_PROPS_BYTES + 8
        })
    );
    let mut both = Binding::service("S", "auth", None);
    both.kv_namespace = Some("x".into());
    assert_eq!(
        check([], &[both]),
        Err(BindingError::Kind { name: "S".into() })
    );
}

#[test]
fn dispatch_namespace_bindings_name_a_kubernetes_namespace() {
    assert_eq!(
        check([], &[Binding::dispatch_namespace("DISPATCHER", "cust-a")]),
        Ok(())
    );
    for bad in ["Cust", "", "a/b", "a.b", &"n".repeat(64)] {
        let error = check([], &[Binding::dispatch_namespace("D", bad)]).unwrap_err();
        assert!(
            matches!(error, BindingError::InvalidDispatchNamespace { .. }),
            "{bad}: {error}"
        );
    }
    let mut outbound = Binding::dispatch_namespace("D", "cust");
    if let Some(dispatch) = &mut outbound.dispatch_namespace {
        dispatch.outbound = Some(crate::dispatch::OutboundWorker {
            worker: "egress".into(),
            params: vec!["tenant".into()],
        });
    }
    assert_eq!(check([], std::slice::from_ref(&outbound)), Ok(()));
    if let Some(dispatch) = &mut outbound.dispatch_namespace {
        dispatch.outbound = Some(crate::dispatch::OutboundWorker {
            worker: "Egress".into(),
            params: Vec::new(),
        });
    }
    let error = check([], std::slice::from_ref(&outbound)).unwrap_err();
    assert!(
        matches!(error, BindingError::InvalidOutbound { .. }),
        "{error}"
    );
    if let Some(dispatch) = &mut outbound.dispatch_namespace {
        dispatch.outbound = Some(crate::dispatch::OutboundWorker {
            worker: "egress".into(),
            params: vec!["a-b".into()],
        });
    }
    let error = check([], &[outbound]).unwrap_err();
    assert!(
        matches!(error, BindingError::InvalidOutboundParam { .. }),
        "{error}"
    );
    let mut both = Binding::dispatch_namespace("D", "cust");
    both.service = Binding::service("D", "auth", None).service;
    assert_eq!(
        check([], &[both]),
        Err(BindingError::Kind { name: "D".into() })
    );
}

#[test]
fn a_d1_binding_names_a_database_and_has_no_other_kind() {
    check([], &[Binding::d1("DB", "probe")]).unwrap();
    let bad = Binding::d1("DB", "ns/probe");
    assert_eq!(
        check([], &[bad]),
        Err(BindingError::InvalidDatabase {
            name: "DB".into(),
            database: "ns/probe".into()
        })
    );
    let mut both = Binding::d1("DB", "probe");
    both.queue = Some(QueueBinding::new("q"));
    assert_eq!(
        check([], &[both]),
        Err(BindingError::Kind { name: "DB".into() })
    );
    let mut both = Binding::kv("DB", "kv");
    both.d1 = Some(D1Binding {
        database: "probe".into(),
    });
    assert_eq!(
        check([], &[both]),
        Err(BindingError::Kind { name: "DB".into() })
    );
}

#[test]
fn images_bindings_have_one_kind_and_read_from_an_empty_object() {
    assert_eq!(check([], &[Binding::images("IMAGES")]), Ok(()));
    let read: Binding = serde_json::from_str(r#"{"name":"IMAGES","images":{}}"#).unwrap();
    assert_eq!(read, Binding::images("IMAGES"));
    for other in [
        Binding::kv("IMAGES", "cache"),
        Binding::queue("IMAGES", "jobs"),
        Binding::dispatch_namespace("IMAGES", "cust"),
        Binding::service("IMAGES", "auth", None),
        Binding::d1("IMAGES", "probe"),
    ] {
        let mut both = other;
        both.images = Some(ImagesBinding {});
        assert_eq!(
            check([], &[both]),
            Err(BindingError::Kind {
                name: "IMAGES".into()
            })
        );
    }
}

#[test]
fn worker_loader_bindings_have_one_kind_and_read_from_an_empty_object() {
    assert_eq!(check([], &[Binding::worker_loader("LOADER")]), Ok(()));
    let read: Binding = serde_json::from_str(r#"{"name":"LOADER","workerLoader":{}}"#).unwrap();
    assert_eq!(read, Binding::worker_loader("LOADER"));
    for other in [Binding::images("LOADER"), Binding::kv("LOADER", "cache")] {
        let mut both = other;
        both.worker_loader = Some(WorkerLoaderBinding {});
        assert_eq!(
            check([], &[both]),
            Err(BindingError::Kind {
                name: "LOADER".into()
            })
        );
    }
}

#[test]
fn an_r2_binding_names_a_bucket_and_has_no_other_kind() {
    check([], &[Binding::r2("BUCKET", "photos")]).unwrap();
    assert_eq!(
        check([], &[Binding::r2("B", "Photos")]),
        Err(BindingError::InvalidBucket {
            name: "B".into(),
            bucket: "Photos".into()
        })
    );
    let mut both = Binding::r2("B", "photos");
    both.d1 = Some(D1Binding {
        database: "db".into(),
    });
    assert_eq!(
        check([], &[both]),
        Err(BindingError::Kind { name: "B".into() })
    );
    assert!(r2_on_a_cluster(&[Binding::r2("B", "photos")], false).is_err());
    assert!(r2_on_a_cluster(&[Binding::r2("B", "photos")], true).is_ok());
    assert!(r2_on_a_cluster(&[Binding::d1("D", "db")], false).is_ok());
}

#[test]
fn a_queue_bindings_delivery_delay_is_twelve_hours_at_most() {
    let read: Binding =
        serde_json::from_str(r#"{"name":"Q","queue":{"name":"jobs","deliveryDelay":43200}}"#)
            .unwrap();
    assert_eq!(
        read.queue.as_ref().map(QueueBinding::delay_seconds),
        Some(43_200)
    );
    assert_eq!(check([], std::slice::from_ref(&read)), Ok(()));
    assert_eq!(QueueBinding::new("jobs").delay_seconds(), 0);
    let mut late = read;
    late.queue = Some(QueueBinding {
        delivery_delay: Some(43_201),
        ..QueueBinding::new("jobs")
    });
    let error = check([], &[late]).unwrap_err();
    assert_eq!(
        error,
        BindingError::QueueDelay {
            name: "Q".into(),
            delay: 43_201
        }
    );
    assert_eq!(
        error.to_string(),
        "binding \"Q\": queue deliveryDelay is 43201, out of 0 to 43200 seconds (12 hours)"
    );
    // Written back without the field when it is not set (the CRD's shape
    // of bindings from before it).
    let plain = serde_json::to_string(&Binding::queue("Q", "jobs")).unwrap();
    assert!(!plain.contains("deliveryDelay"), "{plain}");
}
