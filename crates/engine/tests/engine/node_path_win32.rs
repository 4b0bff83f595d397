//! `node:path`'s win32: Windows paths on any platform, against what Node
//! 20 prints for the same calls (drives, UNC shares, driveless rooted paths,
//! both separators). One difference, on purpose: two driveless rooted paths
//! ('\\a\\b', '\\c') share their root, so `relative` climbs ('..\\..\\c')
//! where Node 20 gave the target back; Node's own test-path-relative.js
//! expects the climb (nodejs/node issue 63600).

use isolane_engine::NodeCompat;

use crate::node_buffer::answer;

const CASES: &str = "[\n  ['resolve', ['c:/x\\\\y', 'd:/z', 'c:../q']], ['resolve', ['//srv/sh', '..', 'a\\\\']], ['resolve', ['c:/', '//srv//sh']], ['resolve', ['\\\\a\\\\b', '..\\\\c']],\n  ['normalize', ['C:']], ['normalize', ['//srv/sh']], ['normalize', ['//srv/sh/d/../f.txt']], ['normalize', ['C:..\\\\..\\\\x\\\\..\\\\y']], ['normalize', ['a\\\\b\\\\..\\\\..\\\\..\\\\']], ['normalize', ['/']],\n  ['join', ['//srv', 'sh']], ['join', ['\\\\\\\\', '/', '/a']], ['join', ['c:', 'f']], ['join', ['', '']], ['join', ['//x']],\n  ['isAbsolute', ['//srv']], ['isAbsolute', ['c:']], ['isAbsolute', ['c:/']], ['isAbsolute', ['x\\\\y']],\n  ['relative', ['C:\\\\a\\\\B\\\\c', 'c:\\\\a\\\\b\\\\d']], ['relative', ['c:\\\\a', 'D:\\\\a']], ['relative', ['\\\\\\\\srv\\\\one', '\\\\\\\\srv\\\\two\\\\x']], ['relative', ['\\\\a\\\\b', '\\\\c']],\n  ['dirname', ['c:\\\\a\\\\\\\\b']], ['dirname', ['\\\\\\\\srv\\\\sh']], ['dirname', ['\\\\\\\\srv\\\\sh\\\\f']], ['dirname', ['c:f']], ['dirname', ['f']],\n  ['basename', ['c:\\\\d\\\\f.ext\\\\\\\\', '.ext']], ['basename', ['c:']], ['basename', ['x.js', 'x.js']], ['extname', ['c:\\\\a.b\\\\..c']], ['extname', ['c:.x']],\n  ['parse', ['C:\\\\d\\\\\\\\f.txt']], ['parse', ['\\\\\\\\srv\\\\sh\\\\f']], ['parse', ['c:']], ['parse', ['.\\\\']],\n  ['format', [{ root: 'C:\\\\', dir: 'C:\\\\d', name: 'f', ext: 'txt' }]],\n  ['toNamespacedPath', ['c:\\\\a\\\\..\\\\b']], ['toNamespacedPath', ['\\\\\\\\srv\\\\sh\\\\f']],\n]";

#[tokio::test]
async fn win32_paths_as_node() {
    let body = [
        "const cases = ",
        CASES,
        ";
        const out = cases.map(([fn, args]) => `${fn} ${JSON.stringify(args)} => ${JSON.stringify(path.win32[fn](...args))}`);
        out.push(`posix basename ${JSON.stringify(path.posix.basename('a', 'a'))} ${JSON.stringify(path.posix.basename('/x/a', 'a'))}`);
        out.push(`makeLong ${JSON.stringify(path._makeLong('/x'))} ${JSON.stringify(path.win32._makeLong('c:\\\\a'))}`);
        return out.join('\\n');",
    ]
    .concat();
    let out = answer(NodeCompat::V2, "import path from 'node:path';", &body).await;
    let expected = [
        "resolve [\"c:/x\\\\y\",\"d:/z\",\"c:../q\"] => \"c:\\\\x\\\\q\"",
        "resolve [\"//srv/sh\",\"..\",\"a\\\\\"] => \"\\\\\\\\srv\\\\sh\\\\a\"",
        "resolve [\"c:/\",\"//srv//sh\"] => \"\\\\\\\\srv\\\\sh\\\\\"",
        "resolve [\"\\\\a\\\\b\",\"..\\\\c\"] => \"\\\\a\\\\c\"",
        "normalize [\"C:\"] => \"C:.\"",
        "normalize [\"//srv/sh\"] => \"\\\\\\\\srv\\\\sh\\\\\"",
        "normalize [\"//srv/sh/d/../f.txt\"] => \"\\\\\\\\srv\\\\sh\\\\f.txt\"",
        "normalize [\"C:..\\\\..\\\\x\\\\..\\\\y\"] => \"C:..\\\\..\\\\y\"",
        "normalize [\"a\\\\b\\\\..\\\\..\\\\..\\\\\"] => \"..\\\\\"",
        "normalize [\"/\"] => \"\\\\\"",
        "join [\"//srv\",\"sh\"] => \"\\\\\\\\srv\\\\sh\\\\\"",
        "join [\"\\\\\\\\\",\"/\",\"/a\"] => \"\\\\a\"",
        "join [\"c:\",\"f\"] => \"c:\\\\f\"",
        "join [\"\",\"\"] => \".\"",
        "join [\"//x\"] => \"\\\\x\"",
        "isAbsolute [\"//srv\"] => true",
        "isAbsolute [\"c:\"] => false",
        "isAbsolute [\"c:/\"] => true",
        "isAbsolute [\"x\\\\y\"] => false",
        "relative [\"C:\\\\a\\\\B\\\\c\",\"c:\\\\a\\\\b\\\\d\"] => \"..\\\\d\"",
        "relative [\"c:\\\\a\",\"D:\\\\a\"] => \"D:\\\\a\"",
        "relative [\"\\\\\\\\srv\\\\one\",\"\\\\\\\\srv\\\\two\\\\x\"] => \"..\\\\two\\\\x\"",
        "relative [\"\\\\a\\\\b\",\"\\\\c\"] => \"..\\\\..\\\\c\"",
        "dirname [\"c:\\\\a\\\\\\\\b\"] => \"c:\\\\a\\\\\"",
        "dirname [\"\\\\\\\\srv\\\\sh\"] => \"\\\\\\\\srv\\\\sh\"",
        "dirname [\"\\\\\\\\srv\\\\sh\\\\f\"] => \"\\\\\\\\srv\\\\sh\\\\\"",
        "dirname [\"c:f\"] => \"c:\"",
        "dirname [\"f\"] => \".\"",
        "basename [\"c:\\\\d\\\\f.ext\\\\\\\\\",\".ext\"] => \"f\"",
        "basename [\"c:\"] => \"\"",
        "basename [\"x.js\",\"x.js\"] => \"\"",
        "extname [\"c:\\\\a.b\\\\..c\"] => \".c\"",
        "extname [\"c:.x\"] => \"\"",
        "parse [\"C:\\\\d\\\\\\\\f.txt\"] => {\"root\":\"C:\\\\\",\"dir\":\"C:\\\\d\\\\\",\"base\":\"f.txt\",\"ext\":\".txt\",\"name\":\"f\"}",
        "parse [\"\\\\\\\\srv\\\\sh\\\\f\"] => {\"root\":\"\\\\\\\\srv\\\\sh\\\\\",\"dir\":\"\\\\\\\\srv\\\\sh\\\\\",\"base\":\"f\",\"ext\":\"\",\"name\":\"f\"}",
        "parse [\"c:\"] => {\"root\":\"c:\",\"dir\":\"c:\",\"base\":\"\",\"ext\":\"\",\"name\":\"\"}",
        "parse [\".\\\\\"] => {\"root\":\"\",\"dir\":\"\",\"base\":\".\",\"ext\":\"\",\"name\":\".\"}",
        "format [{\"root\":\"C:\\\\\",\"dir\":\"C:\\\\d\",\"name\":\"f\",\"ext\":\"txt\"}] => \"C:\\\\d\\\\f.txt\"",
        "toNamespacedPath [\"c:\\\\a\\\\..\\\\b\"] => \"\\\\\\\\?\\\\c:\\\\b\"",
        "toNamespacedPath [\"\\\\\\\\srv\\\\sh\\\\f\"] => \"\\\\\\\\?\\\\UNC\\\\srv\\\\sh\\\\f\"",
        "posix basename \"\" \"a\"",
        "makeLong \"/x\" \"\\\\\\\\?\\\\c:\\\\a\"",
    ];
    assert_eq!(out, expected.join("\n"));
}

/// A file: URL from a Windows path (drive, share, the \\?\ forms) and the
/// characters a posix path's URL percent-encodes.
#[tokio::test]
async fn path_to_file_url_as_node() {
    let body = "const out = [];
        const check = (f) => { try { out.push(f()); } catch (e) { out.push(`${e.code}: ${e.message}`); } };
        check(() => url.pathToFileURL('/a\\\\b c%d?e#f^g[h]i\\nj', { windows: false }).href);
        check(() => url.pathToFileURL('C:\\\\dir\\\\x y', { windows: true }).href);
        check(() => url.pathToFileURL('\\\\\\\\server\\\\share\\\\a b', { windows: true }).href);
        check(() => url.pathToFileURL('\\\\\\\\?\\\\C:\\\\p\\\\f.txt', { windows: true }).href);
        check(() => url.pathToFileURL('\\\\\\\\?\\\\UNC\\\\srv\\\\sh\\\\f', { windows: true }).href);
        check(() => url.pathToFileURL('\\\\\\\\host', { windows: true }).href);
        check(() => url.pathToFileURL('/dir/', { windows: false }).href);
        return out.join('\\n');";
    let out = answer(NodeCompat::V2, "import url from 'node:url';", body).await;
    let expected = [
        "file:///a%5Cb%20c%25d%3Fe%23f%5Eg%5Bh%5Di%0Aj",
        "file:///C:/dir/x%20y",
        "file://server/share/a%20b",
        "file:///C:/p/f.txt",
        "file://srv/sh/f",
        r#"ERR_INVALID_ARG_VALUE: The argument 'path' Missing UNC resource path. Received '\\\\host'"#,
        "file:///dir/",
    ];
    assert_eq!(out, expected.join("\n"));
}
