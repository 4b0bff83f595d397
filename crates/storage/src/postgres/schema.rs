//! The PostgreSQL schema and its migrations. In a cluster the operator
//! owns them (it runs [`migrate`] at start); runtime nodes only check, on
//! their first operation, that the schema they need is there.
//!
//! Migrations are numbered, applied in order, each once, in one
//! transaction under an advisory lock, so operators starting together (or
//! a test and an operator) never apply one twice.

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::StoreError;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i32 = 12;

/// Each migration: its version and its SQL.
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
    // `IF NOT EXISTS`: databases made before migrations were numbered
    // already have this table.
    "CREATE TABLE IF NOT EXISTS kv (
        namespace TEXT NOT NULL,
        kv TEXT NOT NULL,
        key BYTEA NOT NULL,
        value BYTEA NOT NULL,
        metadata TEXT,
        expiration BIGINT,
        PRIMARY KEY (namespace, kv, key)
    );",
    ),
    (
        2,
        // Bytes each Kubernetes namespace stores (keys, values, metadata),
        // kept by a trigger on every path that changes kv; the table is
        // locked while what it holds already is counted.
        "LOCK TABLE kv IN SHARE ROW EXCLUSIVE MODE;
    CREATE TABLE kv_usage (
        namespace TEXT PRIMARY KEY,
        bytes BIGINT NOT NULL
    );
    CREATE FUNCTION kv_usage_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE kv_usage SET bytes = bytes - octet_length(OLD.key) - octet_length(OLD.value)
                - coalesce(octet_length(OLD.metadata), 0)
            WHERE namespace = OLD.namespace;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO kv_usage (namespace, bytes)
            VALUES (NEW.namespace, octet_length(NEW.key) + octet_length(NEW.value)
                + coalesce(octet_length(NEW.metadata), 0))
            ON CONFLICT (namespace) DO UPDATE SET bytes = kv_usage.bytes + excluded.bytes;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER kv_usage AFTER INSERT OR UPDATE OR DELETE ON kv
        FOR EACH ROW EXECUTE FUNCTION kv_usage_count();
    INSERT INTO kv_usage (namespace, bytes)
        SELECT namespace, sum(octet_length(key) + octet_length(value) + coalesce(octet_length(metadata), 0))
        FROM kv GROUP BY namespace;",
    ),
    (
        3,
        // Durable Objects' storage (one row a key, under namespace, class
        // and object id), the bytes each namespace stores there (kept by a
        // trigger, as kv_usage), and each object's alarm.
        "CREATE TABLE do_storage (
        namespace TEXT NOT NULL,
        class TEXT NOT NULL,
        object TEXT NOT NULL,
        key BYTEA NOT NULL,
        value BYTEA NOT NULL,
        PRIMARY KEY (namespace, class, object, key)
    );
    CREATE TABLE do_usage (
        namespace TEXT PRIMARY KEY,
        bytes BIGINT NOT NULL
    );
    CREATE FUNCTION do_usage_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE do_usage SET bytes = bytes - octet_length(OLD.key) - octet_length(OLD.value)
            WHERE namespace = OLD.namespace;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO do_usage (namespace, bytes)
            VALUES (NEW.namespace, octet_length(NEW.key) + octet_length(NEW.value))
            ON CONFLICT (namespace) DO UPDATE SET bytes = do_usage.bytes + excluded.bytes;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER do_usage AFTER INSERT OR UPDATE OR DELETE ON do_storage
        FOR EACH ROW EXECUTE FUNCTION do_usage_count();
    CREATE TABLE do_alarm (
        namespace TEXT NOT NULL,
        class TEXT NOT NULL,
        object TEXT NOT NULL,
        at BIGINT NOT NULL,
        PRIMARY KEY (namespace, class, object)
    );",
    ),
    (
        4,
        // Alarm deliveries: a claim (who may deliver it until when, or
        // when a failed one is retried) and the failures so far; due
        // alarms are found by time.
        "ALTER TABLE do_alarm ADD COLUMN claimed_until BIGINT,
        ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX do_alarm_due ON do_alarm (at);",
    ),
    (
        5,
        // Alarms by when they can next be claimed (their time, or the end
        // of the claim holding them), in all and per namespace: the next
        // look's time and each namespace's share of a claim are index
        // ranges, however long one namespace's backlog (with 100,000
        // overdue alarms of one namespace, a claim took 0.9 ms instead of
        // 84 ms and the next look's time 0.1 ms instead of 10 ms).
        "CREATE INDEX do_alarm_ready ON do_alarm
        (namespace, (GREATEST(at, COALESCE(claimed_until, at))));
    CREATE INDEX do_alarm_next ON do_alarm ((GREATEST(at, COALESCE(claimed_until, at))));",
    ),
    (
        6,
        // Each Durable Object's owner epoch: an instance takes the object
        // (the epoch goes up) and every write it makes checks the epoch is
        // still its own, so a stale instance cannot write.
        "CREATE TABLE do_owner (
        namespace TEXT NOT NULL,
        class TEXT NOT NULL,
        object TEXT NOT NULL,
        owner TEXT NOT NULL,
        epoch BIGINT NOT NULL,
        PRIMARY KEY (namespace, class, object)
    );",
    ),
    (
        7,
        // The bytes each Durable Object stores (its per-object limit),
        // kept by a trigger as do_usage, counted once for what is there;
        // an object that stores nothing has no row.
        "CREATE TABLE do_object_usage (
        namespace TEXT NOT NULL,
        class TEXT NOT NULL,
        object TEXT NOT NULL,
        bytes BIGINT NOT NULL,
        PRIMARY KEY (namespace, class, object)
    );
    CREATE FUNCTION do_object_usage_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE do_object_usage SET bytes = bytes - octet_length(OLD.key) - octet_length(OLD.value)
            WHERE namespace = OLD.namespace AND class = OLD.class AND object = OLD.object;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO do_object_usage (namespace, class, object, bytes)
            VALUES (NEW.namespace, NEW.class, NEW.object, octet_length(NEW.key) + octet_length(NEW.value))
            ON CONFLICT (namespace, class, object)
            DO UPDATE SET bytes = do_object_usage.bytes + excluded.bytes;
        END IF;
        IF TG_OP = 'DELETE' THEN
            DELETE FROM do_object_usage
            WHERE namespace = OLD.namespace AND class = OLD.class AND object = OLD.object
              AND bytes <= 0;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER do_object_usage AFTER INSERT OR UPDATE OR DELETE ON do_storage
        FOR EACH ROW EXECUTE FUNCTION do_object_usage_count();
    INSERT INTO do_object_usage (namespace, class, object, bytes)
        SELECT namespace, class, object, sum(octet_length(key) + octet_length(value))
        FROM do_storage GROUP BY namespace, class, object;",
    ),
    (
        8,
        // SQLite-backed Durable Objects' logs: each object's records (the
        // pages its commits changed, or a snapshot) in `seq` order; their
        // bytes count in do_usage and do_object_usage, as do_storage's.
        "CREATE TABLE do_sql_log (
        namespace TEXT NOT NULL,
        class TEXT NOT NULL,
        object TEXT NOT NULL,
        seq BIGINT NOT NULL,
        record BYTEA NOT NULL,
        PRIMARY KEY (namespace, class, object, seq)
    );
    CREATE FUNCTION do_sql_log_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            UPDATE do_usage SET bytes = bytes - octet_length(OLD.record)
            WHERE namespace = OLD.namespace;
            UPDATE do_object_usage SET bytes = bytes - octet_length(OLD.record)
            WHERE namespace = OLD.namespace AND class = OLD.class AND object = OLD.object;
            DELETE FROM do_object_usage
            WHERE namespace = OLD.namespace AND class = OLD.class AND object = OLD.object
              AND bytes <= 0;
        ELSE
            INSERT INTO do_object_usage (namespace, class, object, bytes)
            VALUES (NEW.namespace, NEW.class, NEW.object, octet_length(NEW.record))
            ON CONFLICT (namespace, class, object)
            DO UPDATE SET bytes = do_object_usage.bytes + excluded.bytes;
            INSERT INTO do_usage (namespace, bytes) VALUES (NEW.namespace, octet_length(NEW.record))
            ON CONFLICT (namespace) DO UPDATE SET bytes = do_usage.bytes + excluded.bytes;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER do_sql_log AFTER INSERT OR DELETE ON do_sql_log
        FOR EACH ROW EXECUTE FUNCTION do_sql_log_count();",
    ),
    (
        9,
        // Queues' messages (one row a message, under namespace and queue),
        // found for delivery by when they are visible, and what each
        // namespace's queues hold (its quota), kept by a trigger.
        "CREATE TABLE queue_message (
        namespace TEXT NOT NULL,
        queue TEXT NOT NULL,
        id TEXT NOT NULL,
        body BYTEA NOT NULL,
        content_type TEXT NOT NULL,
        sent_at BIGINT NOT NULL,
        visible_at BIGINT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (namespace, queue, id)
    );
    CREATE INDEX queue_message_ready ON queue_message (namespace, queue, visible_at);
    CREATE TABLE queue_usage (
        namespace TEXT PRIMARY KEY,
        messages BIGINT NOT NULL,
        bytes BIGINT NOT NULL
    );
    CREATE FUNCTION queue_usage_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            UPDATE queue_usage SET messages = messages - 1, bytes = bytes - octet_length(OLD.body)
            WHERE namespace = OLD.namespace;
        ELSE
            INSERT INTO queue_usage (namespace, messages, bytes)
            VALUES (NEW.namespace, 1, octet_length(NEW.body))
            ON CONFLICT (namespace) DO UPDATE SET messages = queue_usage.messages + 1,
                bytes = queue_usage.bytes + excluded.bytes;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER queue_usage AFTER INSERT OR DELETE ON queue_message
        FOR EACH ROW EXECUTE FUNCTION queue_usage_count();",
    ),
    (
        10,
        // Each queue's owner epoch, as `do_owner` is each object's: the
        // node that delivers a queue takes it (the epoch goes up), and each
        // lease it takes checks the epoch is still its own.
        "CREATE TABLE queue_owner (
        namespace TEXT NOT NULL,
        queue TEXT NOT NULL,
        owner TEXT NOT NULL,
        epoch BIGINT NOT NULL,
        PRIMARY KEY (namespace, queue)
    );",
    ),
    (
        11,
        // Workflows' instances, their step logs and the events sent to
        // them (the SQLite backend's tables), and each workflow's owner
        // epoch, as `queue_owner` is each queue's.
        "CREATE TABLE workflow_instance (
        namespace TEXT NOT NULL,
        workflow TEXT NOT NULL,
        id TEXT NOT NULL,
        worker TEXT NOT NULL,
        class TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        status TEXT NOT NULL,
        paused BOOLEAN NOT NULL DEFAULT false,
        wake_at BIGINT NOT NULL DEFAULT 0,
        waiting_for TEXT,
        retry_delay BIGINT NOT NULL DEFAULT 1000,
        failures BIGINT NOT NULL DEFAULT 0,
        last_failure TEXT,
        output TEXT,
        error TEXT,
        PRIMARY KEY (namespace, workflow, id)
    );
    CREATE INDEX workflow_instance_due ON workflow_instance (wake_at);
    CREATE TABLE workflow_step (
        namespace TEXT NOT NULL,
        workflow TEXT NOT NULL,
        id TEXT NOT NULL,
        step TEXT NOT NULL,
        result TEXT,
        attempts BIGINT NOT NULL DEFAULT 0,
        started_at BIGINT NOT NULL,
        PRIMARY KEY (namespace, workflow, id, step)
    );
    CREATE TABLE workflow_event (
        seq BIGSERIAL PRIMARY KEY,
        namespace TEXT NOT NULL,
        workflow TEXT NOT NULL,
        id TEXT NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        sent_at BIGINT NOT NULL
    );
    CREATE INDEX workflow_event_of ON workflow_event (namespace, workflow, id, type, seq);
    CREATE TABLE workflow_owner (
        namespace TEXT NOT NULL,
        workflow TEXT NOT NULL,
        owner TEXT NOT NULL,
        epoch BIGINT NOT NULL,
        PRIMARY KEY (namespace, workflow)
    );",
    ),
    (
        12,
        // The owner epoch each leased message was leased under (NULL: not
        // leased, or unfenced): a new owner makes those of older epochs
        // visible as it takes the queue (a dead owner's batches).
        "ALTER TABLE queue_message ADD COLUMN lease_epoch BIGINT;",
    ),
];

/// The advisory lock migrations run under ("ISOLANE" and a 1).
const LOCK: i64 = 0x0049_534f_4c41_4e45;

/// Applies the migrations `client`'s database lacks; the version it is at
/// afterwards.
pub(crate) async fn migrate(client: &mut Client) -> Result<i32, StoreError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS isolane_schema (
            version INTEGER PRIMARY KEY,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );",
    )
    .await?;
    let current: Option<i32> = tx
        .query_one("SELECT max(version) FROM isolane_schema", &[])
        .await?
        .try_get(0)?;
    let current = current.unwrap_or(0);
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO isolane_schema (version) VALUES ($1)",
            &[version],
        )
        .await?;
        tracing::info!(version, "applied a storage migration");
    }
    tx.commit().await?;
    Ok(current.max(SCHEMA_VERSION))
}

/// `Ok` when the database's schema is at least [`SCHEMA_VERSION`].
pub(crate) async fn check(client: &Client) -> Result<(), StoreError> {
    let found = match client
        .query_one("SELECT max(version) FROM isolane_schema", &[])
        .await
    {
        Ok(row) => row.try_get::<_, Option<i32>>(0)?.unwrap_or(0),
        Err(error) if error.code() == Some(&SqlState::UNDEFINED_TABLE) => 0,
        Err(error) => return Err(error.into()),
    };
    if found < SCHEMA_VERSION {
        return Err(StoreError::Schema {
            found,
            want: SCHEMA_VERSION,
        });
    }
    Ok(())
}
