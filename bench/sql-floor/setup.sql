-- The floor under section 17's acknowledged SQL write: tables shaped as
-- the append's (do_owner, do_object_usage/do_usage, do_sql_log), for
-- pgbench: `psql -f setup.sql`, then
-- `pgbench -n -c 1 -t 4000 -M prepared -f {plain,append,pipe}.sql`.
CREATE TABLE t (id bigserial PRIMARY KEY, v text);
CREATE TABLE u (k text PRIMARY KEY, bytes bigint);
CREATE TABLE lg (ns text, c text, o text, seq bigint, record bytea, PRIMARY KEY (ns, c, o, seq));
CREATE TABLE own (ns text, c text, o text, epoch bigint, PRIMARY KEY (ns, c, o));
INSERT INTO own VALUES ('n', 'c', 'o', 1);
