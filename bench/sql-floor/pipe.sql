BEGIN;
\startpipeline
SELECT epoch FROM own WHERE ns='n' AND c='c' AND o='o' FOR SHARE;
INSERT INTO u VALUES ('o', 0) ON CONFLICT (k) DO UPDATE SET bytes = u.bytes RETURNING bytes;
INSERT INTO u VALUES ('n', 0) ON CONFLICT (k) DO UPDATE SET bytes = u.bytes RETURNING bytes;
INSERT INTO lg SELECT 'n','c','o', coalesce(max(seq),0)+1, '\x0102030405060708'::bytea FROM lg WHERE ns='n' AND c='c' AND o='o';
INSERT INTO u VALUES ('o', 0) ON CONFLICT (k) DO UPDATE SET bytes = u.bytes RETURNING bytes;
INSERT INTO u VALUES ('n', 0) ON CONFLICT (k) DO UPDATE SET bytes = u.bytes RETURNING bytes;
\endpipeline
COMMIT;
