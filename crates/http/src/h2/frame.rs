//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte header and each type's payload.
