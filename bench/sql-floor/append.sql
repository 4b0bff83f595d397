BEGIN;
SELECT epoch FROM own WHERE ns='n' AND c='c' AND o='o' FOR SHARE;
INSERT INTO u VALUES ('o', 0) ON CONFLICT (k) DO UPDATE SET bytes = u.bytes RETURNING bytes;
INSERT INTO u VALUES ('n', 0) ON CONFLICT (k) DO UPDATE SET bytes = u.bytes RETURNING bytes;
SELECT coalesce(max(seq),0)+1 AS s FROM lg WHERE ns='n' AND c='c' AND o='o' \gset
INSERT INTO lg VALUES ('n','c','o',:s, '\x0102030405060708');
INSERT INTO u VALUES ('o', 0) ON CONFLICT (k) DO UPDATE SET bytes = u.bytes RETURNING bytes;
INSERT INTO u VALUES ('n', 0) ON CONFLICT (k) DO UPDATE SET bytes = u.bytes RETURNING bytes;
COMMIT;
