//! The static Huffman code of HPACK (RFC 7541 Appendix B).
