//! The PROXY protocol header, as a listener with RemoteIPProxyProtocol On
//! reads it from whatever the connection's first reads returned.
//!
//! The parser is stateless and handed the bytes so far, so what it says of
//! each prefix of the input must be one story: "more" for every prefix
//! until one settles it, then the same answer (the same header and length,
//! or a refusal) for that prefix and every longer one. A length is never
//! past the input nor past the protocol's maximum, and never in the middle
//! of what an earlier prefix said was still needed.

use warren_http::proxy_protocol::{parse, MAX_V1, MAX_V2};

pub fn run(data: &[u8]) {
    let whole = parse(data);
    if let Ok(Some((_, used))) = &whole {
        assert!(*used <= data.len() && *used <= MAX_V2, "length {used} of {} bytes", data.len());
        if data.starts_with(b"PROXY ") {
            assert!(*used <= MAX_V1, "a v1 header of {used} bytes");
        }
    }
    let mut settled = None;
    for end in 0..=data.len().min(MAX_V2 + 1) {
        let now = parse(&data[..end]);
        match (&settled, &now) {
            (None, Ok(None)) => {}
            (None, _) => settled = Some(now),
            (Some(first), _) => assert_eq!(&now, first, "prefix of {end} bytes of {data:?}"),
        }
    }
    if data.len() <= MAX_V2 + 1 {
        assert_eq!(settled.unwrap_or(Ok(None)), whole, "the whole input and its prefixes differ");
    }
}
