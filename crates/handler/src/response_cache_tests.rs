//! Unit tests of the response cache's key.

use super::*;

#[test]
fn session_identifiers_and_queries_leave_the_key_as_asked() {
    let c = CacheDirectives { ignore_url_session_identifiers: Some(vec!["jsessionid".into(), "sid".into()]), ..Default::default() };
    assert_eq!(keyed_target(&c, b"/a;jsessionid=1?sid=2&x=3"), "/a?x=3");
    assert_eq!(keyed_target(&c, b"/a%2f?x"), "/a%2f?x");
    let c = CacheDirectives { ignore_query_string: Some(true), ..Default::default() };
    assert_eq!(keyed_target(&c, b"/a?x=1"), "/a");
}
