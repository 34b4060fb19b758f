use super::*;
use std::collections::HashMap;

struct Request(HashMap<&'static str, &'static str>);

impl Facts for Request {
    fn variable(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|v| v.to_string())
    }
    fn request_header(&self, name: &str) -> Option<String> {
        self.0.iter().find(|(k, _)| k.strip_prefix("req:").is_some_and(|h| h.eq_ignore_ascii_case(name))).map(|(_, v)| v.to_string())
    }
    fn response_header(&self, name: &str) -> Option<String> {
        self.0.get(format!("resp:{name}").as_str()).map(|v| v.to_string())
    }
    fn env(&self, name: &str) -> Option<String> {
        self.0.get(format!("env:{name}").as_str()).map(|v| v.to_string())
    }
    fn remote_ip(&self) -> IpAddr {
        "192.168.1.7".parse().unwrap()
    }
}

fn request() -> Request {
    Request(HashMap::from([
        ("REQUEST_URI", "/index.php/apps/files"),
        ("HTTP_USER_AGENT", "DavClnt"),
        ("HTTP_HOST", "Cloud.Example.org"),
        ("REQUEST_METHOD", "PROPFIND"),
        ("QUERY_STRING", "a=1&b=2"),
        ("REMOTE_ADDR", "192.168.1.7"),
        ("HTTPS", "off"),
        ("req:User-Agent", "DavClnt"),
        ("resp:Content-Type", "text/html"),
        ("env:STAGE", "test"),
        ("REQUEST_STATUS", "404"),
    ]))
}

fn holds(text: &str) -> bool {
    Expr::parse(text, false).unwrap_or_else(|e| panic!("{text}: {e}")).holds(&request())
}

#[test]
fn comparisons_and_logic() {
    assert!(holds("%{HTTP_USER_AGENT} =~ /^DavClnt/"));
    assert!(holds("%{HTTP_USER_AGENT} =~ m#^davclnt#i && %{REQUEST_METHOD} == 'PROPFIND'"));
    assert!(!holds("%{HTTP_USER_AGENT} !~ /^DavClnt/"));
    assert!(holds("!(%{HTTPS} == 'on') || false"));
    assert!(holds("true && !false"));
    assert!(!holds("false || false && true"));
    assert!(holds("%{REQUEST_STATUS} -eq 404 && %{REQUEST_STATUS} -ge 400 && 9 -lt 10 && '9' > '10'"));
    assert!(!holds("'x' -eq 0"), "a non-number is no integer");
    assert!(holds("%{REQUEST_METHOD} in { 'GET', 'PROPFIND' }"));
    assert!(!holds("%{REQUEST_METHOD} in {'GET'}"));
    assert!(holds("%{REMOTE_ADDR} -ipmatch '192.168.0.0/16' && -R '192.168.1.0/24' && !-R '10.0.0.0/8'"));
    assert!(holds("%{REQUEST_URI} -strmatch '/index.php/*' && %{HTTP_HOST} -strcmatch '*.example.ORG'"));
    assert!(!holds("%{REQUEST_URI} -fnmatch '/index.php*'"), "-fnmatch's * stops at /");
    assert!(holds("-n %{QUERY_STRING} && -z %{REMOTE_USER} && -T 'yes' && !-T 'off'"));
    assert!(holds("%{QUERY_STRING} = 'a=1&b=2'"));
}

#[test]
fn words_functions_and_captures() {
    assert!(holds("tolower(%{HTTP_HOST}) == 'cloud.example.org' && toupper('a') == 'A'"));
    assert!(holds("%{REQUEST_URI} =~ m#^/index\\.php/(\\w+)/(.*)# && $1 == 'apps' && \"$2-%{REQUEST_METHOD}\" == 'files-PROPFIND'"));
    assert!(holds("%{req:user-agent} == 'DavClnt' && %{http:User-Agent} == req('User-Agent') && resp('Content-Type') == 'text/html'"));
    assert!(holds("%{env:STAGE} == 'test' && reqenv('NONE') == ''"));
    assert!(holds("base64('warren') == 'd2FycmVu' && unbase64('d2FycmVu') == 'warren'"));
    assert!(holds("escape('/a b') == '/a%20b' && unescape('%41') == 'A'"));
    assert!(holds("'a' . %{REQUEST_METHOD} . 'b' == 'aPROPFINDb'"));
    assert!(holds("'it\\'s' == \"it's\""));
    let e = Expr::parse("%{REQUEST_URI} =~ m#^/(\\w+)\\.php/(.*)#", false).unwrap();
    let caps = e.captures(&request()).unwrap();
    assert_eq!(Expr::expand("$1:$2:$3:$$x", &caps), "index:apps/files::$$x");
}

#[test]
fn malformed_and_refused() {
    for bad in [
        "",
        "%{HTTP_HOST}",
        "%{NO_SUCH_VAR} == 'a'",
        "%{HTTP_HOST} =~ /(/",
        "%{HTTP_HOST} =~ /a/x",
        "%{HTTP_HOST} == 'a",
        "(true",
        "true false",
        "nosuch('x') == ''",
        "md5('x') == ''",
        "-F '/x'",
        "%{REMOTE_ADDR} -ipmatch 'not-an-ip'",
        "%{HTTP_HOST} in %{HTTP_HOST}",
        "bare == 'x'",
    ] {
        assert!(Expr::parse(bad, false).is_err(), "{bad:?} parsed");
    }
    let deep = format!("{}true{}", "(".repeat(100_000), ")".repeat(100_000));
    assert!(Expr::parse(&deep, false).unwrap_err().contains("nested more than"));
    assert!(Expr::parse(&"!".repeat(100_000), false).unwrap_err().contains("nested more than"));
    assert!(Expr::parse(&format!("{}'a'{}", "tolower(".repeat(100_000), ")".repeat(100_000)), false).is_err());
    assert!(Expr::parse(&vec!["-n 'a'"; 10_000].join(" && "), false).unwrap_err().contains("more than 256 tests"));
    assert!(Expr::parse(&vec!["-n 'a'"; 256].join(" || "), false).unwrap().holds(&request()));
    for file_reading in ["-f '/etc/passwd'", "-d '/'", "file('/etc/passwd') == ''", "%{filesize:/etc/passwd} -gt 0", "-e %{REQUEST_FILENAME}", "osenv('HOME') == ''"] {
        assert!(Expr::parse(file_reading, false).is_ok(), "{file_reading}");
        assert!(Expr::parse(file_reading, true).unwrap_err().contains("not allowed in .htaccess"), "{file_reading}");
    }
    assert!(Expr::parse("-d '/' && -f '/proc/self/status' && !-e '/no/such'", false).unwrap().holds(&request()));
    assert!(Expr::parse("env('PATH') != '' && %{env:STAGE} == 'test'", false).unwrap().holds(&request()));
    assert!(Expr::parse("env('PATH') == '' && %{env:STAGE} == 'test'", true).unwrap().holds(&request()), "a tenant's env() is the request's only");
}
