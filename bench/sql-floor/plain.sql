INSERT INTO t (v) VALUES ('x');
