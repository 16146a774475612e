//! Amazon S3 server access logs: space-separated, the time bracketed and
//! the request, referer and user agent quoted, in the order AWS documents
//! them:
//!
//! `79a59df9…2be DOC-EXAMPLE-BUCKET1 [06/Feb/2019:00:00:38 +0000] 192.0.2.3 79a59df9…2be 3E57427F3EXAMPLE REST.GET.VERSIONING - "GET /DOC-EXAMPLE-BUCKET1?versioning HTTP/1.1" 200 - 113 - 7 - "-" "S3Console/0.4" - s9lz…= SigV2 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader DOC-EXAMPLE-BUCKET1.s3.us-west-1.amazonaws.com TLSV1.2 - -`
//!
//! Fields carry AWS's names in snake case (`bucket_owner`, `bucket`,
//! `time`, `remote_ip`, `requester`, `operation`, `key`, `request_uri`, ...)
//! then `method`, `uri` and `protocol`. `time` is when S3 received the
//! request (arrival), in UTC; the client is `remote_ip`, the caller's
//! identity `requester`. Fields AWS adds later are read by position.

use super::fixed::Layout;

const NAMES: [&str; 26] = [
    "bucket_owner",
    "bucket",
    "time",
    "remote_ip",
    "requester",
    "request_id",
    "operation",
    "key",
    "request_uri",
    "http_status",
    "error_code",
    "bytes_sent",
    "object_size",
    "total_time",
    "turn_around_time",
    "referer",
    "user_agent",
    "version_id",
    "host_id",
    "signature_version",
    "cipher_suite",
    "authentication_type",
    "host_header",
    "tls_version",
    "access_point_arn",
    "acl_required",
];

pub static S3: Layout = Layout::new("s3", &[&NAMES], 17, 2).bracketed().request(8);

/// Whether a tokenised line is an S3 access log line: a bucket owner, a
/// bucket, a bracketed CLF time, an operation such as `REST.GET.OBJECT`
/// and a quoted request.
pub fn looks_like(line: &[u8], f: &super::Fields) -> bool {
    use super::tokens::{bracketed_time, wrapped};
    let op = f.in_line(line, 6);
    f.spans.len() >= 17
        && bracketed_time(line, f, 2, crate::ingest::timestamp::parse_clf)
        && op.iter().filter(|&&b| b == b'.').count() >= 2
        && wrapped(line, f, 8, b'"')
}

#[cfg(test)]
mod tests {
    use super::super::fixed::assert_fields;
    use super::*;

    #[test]
    fn s3_lines_carry_aws_names() {
        assert_fields(
            &S3,
            r#"79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be DOC-EXAMPLE-BUCKET1 [06/Feb/2019:00:00:38 +0000] 192.0.2.3 79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be 3E57427F3EXAMPLE REST.GET.VERSIONING - "GET /DOC-EXAMPLE-BUCKET1?versioning HTTP/1.1" 200 - 113 - 7 - "-" "S3Console/0.4" - s9lzHYrFp76ZVxRcpX9+5cjAnEH2ROuNkd2BHfIa6UkFVdtjf5mKR3/eTPFvsiP/XV/VLi31234= SigV2 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader DOC-EXAMPLE-BUCKET1.s3.us-west-1.amazonaws.com TLSV1.2 - -"#,
            &[
                ("time", "06/Feb/2019:00:00:38 +0000"),
                ("remote_ip", "192.0.2.3"),
                ("operation", "REST.GET.VERSIONING"),
                ("tls_version", "TLSV1.2"),
                ("method", "GET"),
            ],
        );
    }
}
