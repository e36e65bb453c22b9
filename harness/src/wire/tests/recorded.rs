//! A real h2 0.4.20 exchange, recorded (see `fixtures/README.md`).

use super::prelude::*;

#[test]
fn recorded_h2_client_to_server() {
    let bytes = unhex(H2_C2S);
    let events = decode(C2S, &bytes);
    assert_eq!(
        brief(&events),
        [
            "@0 PREFACE",
            "@24 s0 SETTINGS Settings { ack: false, values: [(EnablePush, 0), (InitialWindowSize, 2097152)] }",
            "@45 s0 SETTINGS Settings { ack: true, values: [] }",
            "@54 s0 WINDOW_UPDATE WindowUpdate { increment: 5177345 }",
            "@67 s1 HEADERS request :method=POST :path=/tt.v1.Store/Save grpc-timeout=500000u",
            "@178 s1 DATA Data { end_stream: true, padded_len: None, data_len: 1005, compressed_flag: Some(0) }",
            "@1192 s3 HEADERS request :method=POST :path=/tt.v1.Store/Slow grpc-timeout=380m",
            "@1228 s3 DATA Data { end_stream: true, padded_len: None, data_len: 10, compressed_flag: Some(0) }",
            "@1247 s0 PING Ping { ack: false, opaque: [59, 124, 219, 122, 11, 135, 22, 180] }",
            "@1264 s5 HEADERS request :method=POST :path=/tt.v1.Store/Hang",
            "@1295 s5 DATA Data { end_stream: false, padded_len: None, data_len: 10, compressed_flag: Some(0) }",
            "@1314 s5 RST_STREAM RstStream { code: Cancel }",
            "@1327 s0 PING Ping { ack: true, opaque: [11, 123, 162, 240, 139, 155, 254, 84] }",
            "@1344 s0 GOAWAY GoAway { last_stream_id: 0, code: NoError, debug: [] }",
        ]
    );
    // h2 Huffman-codes literals and indexes them: the second request's
    // block is a quarter of the first, yet decodes to the same fields.
    let b = blocks(&events);
    assert_eq!(b[0].all().len(), 9);
    assert_eq!(b[0].get("user-agent"), Some("tonic/0.14.9"));
    assert_eq!(b[1].get("user-agent"), Some("tonic/0.14.9"));
    assert_eq!(bytes.len(), 1361);
}

#[test]
fn recorded_h2_server_to_client() {
    let bytes = unhex(H2_S2C);
    let events = decode(S2C, &bytes);
    assert_eq!(
        brief(&events),
        [
            "@0 s0 SETTINGS Settings { ack: false, values: [(InitialWindowSize, 1048576), (MaxHeaderListSize, 16384)] }",
            "@21 s0 WINDOW_UPDATE WindowUpdate { increment: 983041 }",
            "@34 s0 SETTINGS Settings { ack: true, values: [] }",
            "@43 s1 HEADERS response :status=200",
            "@90 s1 DATA Data { end_stream: false, padded_len: None, data_len: 1005, compressed_flag: Some(0) }",
            "@1104 s1 HEADERS trailers grpc-status=0 END_STREAM",
            "@1125 s3 HEADERS trailers-only :status=200 grpc-status=4 grpc-message=Timeout expired END_STREAM",
            "@1164 s0 PING Ping { ack: true, opaque: [59, 124, 219, 122, 11, 135, 22, 180] }",
            "@1181 s0 GOAWAY GoAway { last_stream_id: 2147483647, code: NoError, debug: [] }",
            "@1198 s0 PING Ping { ack: false, opaque: [11, 123, 162, 240, 139, 155, 254, 84] }",
        ]
    );
    let b = blocks(&events);
    assert_eq!(b[0].get("date"), Some(DATE_MASK));
    assert_eq!(b[2].get("grpc-message"), Some("Timeout%20expired"));
    assert_eq!(bytes.len(), 1215);
}
