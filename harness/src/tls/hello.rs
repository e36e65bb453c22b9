//! The ClientHello and ServerHello of a connection, read from its first
//! plaintext records (RFC 8446 §5.1: a record is a content type, a
//! legacy version and a 16-bit length; §4: a handshake message is a type
//! and a 24-bit length). rustls has no hook for the messages it sends or
//! reads, so the bytes are read as they cross the socket, below rustls.
//!
//! Only what a seed fixes is kept: versions, cipher suites, SNI, ALPN,
//! whether a session is offered or resumed. Never the random, the session
//! id or key shares. Any octets at all are read without a panic: a record
//! that is not TLS, a length that runs past its end, a connection that
//! ends inside a hello each give a [`HelloProblem`].

use crate::recorder::event::{ClientHelloFields, HelloProblem, ServerHelloFields, TlsMessageKind};

/// Content types (RFC 8446 §5.1).
const CHANGE_CIPHER_SPEC: u8 = 20;
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;
/// A TLSPlaintext record's largest fragment, 2^14 (§5.1), and a
/// TLSCiphertext's, 2^14 + 256 (§5.2): longer is not TLS.
const MAX_RECORD: u16 = 16384 + 256;
/// Handshake types (§4).
const CLIENT_HELLO: u8 = 1;
const SERVER_HELLO: u8 = 2;
/// Extension types (§4.2; RFC 6066 §3; RFC 7301 §3.1).
const SERVER_NAME: u16 = 0;
const ALPN: u16 = 16;
const PRE_SHARED_KEY: u16 = 41;
const SUPPORTED_VERSIONS: u16 = 43;
/// A HelloRetryRequest's random: SHA-256 of "HelloRetryRequest" (§4.1.3).
const HRR_RANDOM: [u8; 32] = [
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
];
/// How many octets a direction is read for at most: far more than the
/// hellos of any config (a few hundred octets), so that a peer sending
/// handshake records for ever costs bounded memory.
const WATCH_LIMIT: u32 = 64 * 1024;

/// What reading a direction's bytes found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A ClientHello, ServerHello or HelloRetryRequest.
    Hello(TlsMessageKind),
    /// Bytes that are not the hello expected; `octets` read so far.
    Problem(HelloProblem, u32),
}

/// One direction of a connection, read until its plaintext handshake
/// records end (the first alert or encrypted record, §5.2) or something
/// in them is not TLS.
#[derive(Debug)]
pub(crate) struct Flight {
    /// The hello whose absence is a problem (the first message a reader
    /// expects), or `None` to report every hello (a sender's view, which
    /// includes a second ClientHello after a HelloRetryRequest).
    expect: Option<u8>,
    /// Record octets not yet consumed.
    records: Vec<u8>,
    /// Handshake octets of consumed records not yet a whole message.
    messages: Vec<u8>,
    octets: u32,
    hellos: u32,
    done: bool,
    /// A ServerHello chose TLS 1.2: every record after this direction's
    /// ChangeCipherSpec is encrypted, its Finished a handshake record
    /// too (RFC 5246 §7.1), so reading ends there.
    tls12: bool,
}

impl Flight {
    /// The client's sending side, or a server's (every hello reported).
    pub(crate) fn sent() -> Self {
        Self::new(None)
    }

    /// A reader waiting for a ClientHello (a server) or a ServerHello (a
    /// client): only its first message is read.
    pub(crate) fn received(server: bool) -> Self {
        Self::new(Some(if server { CLIENT_HELLO } else { SERVER_HELLO }))
    }

    fn new(expect: Option<u8>) -> Self {
        Self {
            expect,
            records: Vec::new(),
            messages: Vec::new(),
            octets: 0,
            hellos: 0,
            done: false,
            tls12: false,
        }
    }

    /// The connection is TLS 1.2: the other direction read a ServerHello
    /// that chose it (a client's sending side learns it so).
    pub(crate) fn tls12(&mut self) {
        self.tls12 = true;
    }

    /// Reads `bytes`, the next octets of this direction.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Found> {
        let mut found = Vec::new();
        if self.done || bytes.is_empty() {
            return found;
        }
        self.octets = self.octets.saturating_add(bytes.len() as u32);
        self.records.extend_from_slice(bytes);
        while !self.done {
            match self.next_record() {
                Ok(Some(fragment)) => self.messages.extend_from_slice(&fragment),
                Ok(None) => break,
                Err(problem) => self.stop(problem, &mut found),
            }
            self.read_messages(&mut found);
        }
        if self.octets > WATCH_LIMIT {
            self.done = true;
        }
        found
    }

    /// The direction ended (EOF, or a read error): a hello begun and not
    /// finished, or none begun where one was expected, is truncated.
    pub(crate) fn end(&mut self) -> Option<Found> {
        let waiting = self.expect.is_some() && self.hellos == 0;
        let partial = !self.records.is_empty() || !self.messages.is_empty();
        let truncated = !self.done && (waiting || partial);
        self.done = true;
        truncated.then_some(Found::Problem(HelloProblem::Truncated, self.octets))
    }

    fn stop(&mut self, problem: HelloProblem, found: &mut Vec<Found>) {
        found.push(Found::Problem(problem, self.octets));
        self.done = true;
    }

    /// The next whole handshake record's fragment; skips a
    /// ChangeCipherSpec (middlebox compatibility, §D.4), or ends reading
    /// at it in TLS 1.2; ends reading at an alert or an encrypted record.
    fn next_record(&mut self) -> Result<Option<Vec<u8>>, HelloProblem> {
        loop {
            let Some(&content_type) = self.records.first() else {
                return Ok(None);
            };
            match content_type {
                CHANGE_CIPHER_SPEC if self.tls12 => {
                    self.done = true;
                    return Ok(None);
                }
                HANDSHAKE | CHANGE_CIPHER_SPEC => {}
                ALERT | APPLICATION_DATA => {
                    self.done = true;
                    return Ok(None);
                }
                _ => return Err(HelloProblem::NotTlsRecord { content_type }),
            }
            let Some(header) = self.records.get(..5) else {
                return Ok(None);
            };
            let length = u16::from_be_bytes([header[3], header[4]]);
            if length > MAX_RECORD {
                return Err(HelloProblem::RecordTooLong { length });
            }
            let end = 5 + usize::from(length);
            if self.records.len() < end {
                return Ok(None);
            }
            let record: Vec<u8> = self.records.drain(..end).collect();
            if content_type == HANDSHAKE {
                return Ok(Some(record[5..].to_vec()));
            }
        }
    }

    /// Parses every whole message read so far.
    fn read_messages(&mut self, found: &mut Vec<Found>) {
        while !self.done && self.messages.len() >= 4 {
            let m = &self.messages;
            let length = u32::from_be_bytes([0, m[1], m[2], m[3]]) as usize;
            if m.len() < 4 + length {
                return;
            }
            let msg_type = m[0];
            let body: Vec<u8> = self.messages.drain(..4 + length).skip(4).collect();
            let first = self.hellos == 0;
            match (self.expect, parse(msg_type, &body)) {
                (Some(want), _) if first && msg_type != want => {
                    self.stop(HelloProblem::NotAHello { msg_type }, found)
                }
                (_, Ok(Some(hello))) => {
                    self.hellos += 1;
                    self.tls12 |= chooses_tls12(&hello);
                    found.push(Found::Hello(hello));
                    // A reader checks the first message only.
                    self.done |= self.expect.is_some();
                }
                // Not a hello, after the hellos: nothing to record.
                (_, Ok(None)) => {}
                (_, Err(at)) => self.stop(HelloProblem::Malformed { at }, found),
            }
        }
    }
}

/// A ServerHello without `supported_versions` whose legacy_version is
/// TLS 1.2: a TLS 1.2 handshake (RFC 8446 §4.1.3, §4.2.1).
pub(crate) fn chooses_tls12(hello: &TlsMessageKind) -> bool {
    matches!(hello, TlsMessageKind::ServerHello(h)
        if h.selected_version.is_none() && h.legacy_version == 0x0303)
}

/// A hello's fields, `None` for another message type, or where in the
/// body it stopped parsing.
fn parse(msg_type: u8, body: &[u8]) -> Result<Option<TlsMessageKind>, u32> {
    match msg_type {
        CLIENT_HELLO => client_hello(body).map(|f| Some(TlsMessageKind::ClientHello(f))),
        SERVER_HELLO => server_hello(body).map(Some),
        _ => Ok(None),
    }
}

/// RFC 8446 §4.1.2: legacy_version, random, legacy_session_id<0..32>,
/// cipher_suites<2..2^16-2>, legacy_compression_methods<1..2^8-1>,
/// extensions<8..2^16-1>.
fn client_hello(body: &[u8]) -> Result<ClientHelloFields, u32> {
    let mut r = Reader::new(body);
    let legacy_version = r.u16()?;
    r.take(32)?;
    r.vec8()?;
    let suites = r.vec16()?;
    let mut hello = ClientHelloFields {
        legacy_version,
        supported_versions: Vec::new(),
        cipher_suites: u16s(suites).ok_or(r.at)?,
        server_name: None,
        alpn: Vec::new(),
        resumption_offered: false,
    };
    r.vec8()?;
    for (kind, data, at) in extensions(&mut r)? {
        match kind {
            SERVER_NAME => hello.server_name = Some(server_name(data).ok_or(at)?),
            ALPN => hello.alpn = alpn(data).ok_or(at)?,
            SUPPORTED_VERSIONS => {
                let mut v = Reader::new(data);
                hello.supported_versions = u16s(v.vec8().map_err(|_| at)?).ok_or(at)?;
            }
            PRE_SHARED_KEY => hello.resumption_offered = true,
            _ => {}
        }
    }
    Ok(hello)
}

/// RFC 8446 §4.1.3: legacy_version, random, legacy_session_id_echo,
/// cipher_suite, legacy_compression_method, extensions.
fn server_hello(body: &[u8]) -> Result<TlsMessageKind, u32> {
    let mut r = Reader::new(body);
    let legacy_version = r.u16()?;
    let retry = r.take(32)? == HRR_RANDOM;
    r.vec8()?;
    let cipher_suite = r.u16()?;
    r.take(1)?;
    let mut hello = ServerHelloFields {
        legacy_version,
        selected_version: None,
        cipher_suite,
        resumes: false,
    };
    for (kind, data, at) in extensions(&mut r)? {
        match kind {
            SUPPORTED_VERSIONS => {
                let v = <[u8; 2]>::try_from(data).map_err(|_| at)?;
                hello.selected_version = Some(u16::from_be_bytes(v));
            }
            PRE_SHARED_KEY => hello.resumes = true,
            _ => {}
        }
    }
    Ok(if retry {
        TlsMessageKind::HelloRetryRequest(hello)
    } else {
        TlsMessageKind::ServerHello(hello)
    })
}

/// An extension's type, data and offset in the hello's body.
type Extension<'a> = (u16, &'a [u8], u32);

/// The extensions block: each extension's type, data and offset in the
/// body. A hello without the block (a TLS 1.2 peer may omit it) has none.
fn extensions<'a>(r: &mut Reader<'a>) -> Result<Vec<Extension<'a>>, u32> {
    if r.rest() == 0 {
        return Ok(Vec::new());
    }
    let start = r.at + 2;
    let mut block = Reader::new(r.vec16()?);
    block.at = start;
    let mut all = Vec::new();
    while block.rest() > 0 {
        let at = block.at;
        let kind = block.u16()?;
        all.push((kind, block.vec16()?, at));
    }
    Ok(all)
}

/// RFC 6066 §3: ServerNameList<1..2^16-1> of (name_type, HostName); the
/// first host_name (type 0).
fn server_name(data: &[u8]) -> Option<String> {
    let mut list = Reader::new(Reader::new(data).vec16().ok()?);
    while list.rest() > 0 {
        let kind = list.take(1).ok()?[0];
        let name = list.vec16().ok()?;
        if kind == 0 {
            return Some(String::from_utf8_lossy(name).into_owned());
        }
    }
    None
}

/// RFC 7301 §3.1: ProtocolNameList<2..2^16-1> of ProtocolName<1..2^8-1>.
fn alpn(data: &[u8]) -> Option<Vec<String>> {
    let mut list = Reader::new(Reader::new(data).vec16().ok()?);
    let mut names = Vec::new();
    while list.rest() > 0 {
        names.push(String::from_utf8_lossy(list.vec8().ok()?).into_owned());
    }
    Some(names)
}

fn u16s(bytes: &[u8]) -> Option<Vec<u16>> {
    let pairs = bytes.chunks_exact(2);
    pairs
        .remainder()
        .is_empty()
        .then(|| pairs.map(|c| u16::from_be_bytes([c[0], c[1]])).collect())
}

/// Big-endian fields of a message body, each read checked: an `Err` is
/// the offset where the bytes ran out.
struct Reader<'a> {
    bytes: &'a [u8],
    at: u32,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    fn rest(&self) -> usize {
        self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], u32> {
        if self.bytes.len() < n {
            return Err(self.at);
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        self.at += n as u32;
        Ok(head)
    }

    fn u16(&mut self) -> Result<u16, u32> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn vec8(&mut self) -> Result<&'a [u8], u32> {
        let n = self.take(1)?[0];
        self.take(usize::from(n))
    }

    fn vec16(&mut self) -> Result<&'a [u8], u32> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }
}

#[cfg(test)]
#[path = "hello_tests.rs"]
mod tests;
