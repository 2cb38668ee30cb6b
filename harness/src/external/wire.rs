//! A plain-HTTP/1.1 client for `http://` engines: one keep-alive connection per worker, a
//! request's head and body in one write, the response head parsed by `httparse` (hyper's
//! parser), its body read by `Content-Length`, chunked transfer coding, or to the end of the
//! connection. `https://` engines go through ureq (TLS).
//!
//! Why not ureq for plain HTTP too: per request, ureq checks a pooled connection with a
//! non-blocking peek (two `ioctl`s and a `recvfrom` that fails with EAGAIN), sets the socket
//! timeouts again (two `setsockopt`s), and builds an `http::Request` (URI parse, header map,
//! timings): about ten system calls and a few dozen allocations for one exchange of ~2 KB on
//! loopback, where this client makes one `sendto` and (usually) one `recvfrom`. At one request in
//! flight that work is the gap to a load tool (bench/http-throughput/README.md).
//!
//! A request is written by [`Client::begin`] and its response read by [`Client::finish`], so a
//! caller can do its own work while the engine answers (the replay readies the next request and
//! reads the previous answer there): at one request in flight, that work is then not part of
//! each round trip.
//!
//! Timeouts: the socket's read and write timeouts are the configuration's `timeout_ms`, and a
//! response that has not fully arrived `timeout_ms` after the request was sent fails as a
//! timeout (checked after every read). A reused connection the engine closed while idle is
//! reconnected and the request sent again, once, before any byte of a response was read (that is
//! not a retry: nothing reached the engine).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Largest response body read.
pub const MAX_BODY: usize = 64 << 20;

/// Where a `http://` URL points: the address to connect to, the `Host` header, the request
/// target. None for a URL this client does not handle (userinfo, another scheme).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target<'a> {
    /// `host:port` to connect to (port 80 when the URL names none).
    pub connect: String,
    /// The authority as written (the `Host` header).
    pub host: &'a str,
    /// Path and query (`/` when the URL has none), without a fragment.
    pub path: String,
}

/// Parses a `http://` URL (None for anything else).
pub fn target(url: &str) -> Option<Target<'_>> {
    let scheme = url.get(..7)?;
    if !scheme.eq_ignore_ascii_case("http://") {
        return None;
    }
    let rest = &url[7..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = &rest[..end];
    if host.is_empty() || host.contains('@') || host.chars().any(|c| c.is_whitespace()) {
        return None;
    }
    let mut path = rest[end..]
        .split('#')
        .next()
        .unwrap_or_default()
        .to_string();
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    // A port: after the last `:` outside an IPv6 literal's brackets.
    let has_port = match host.rfind(':') {
        Some(i) => !host[i..].contains(']'),
        None => false,
    };
    let connect = if has_port {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    Some(Target {
        connect,
        host,
        path,
    })
}

/// One worker's connection.
#[derive(Debug)]
pub struct Client {
    timeout: Duration,
    conn: Option<(String, TcpStream)>,
    /// Whether the connection was opened for the request in flight (a closed reused one is
    /// reopened once; a fresh one that fails has failed).
    fresh: bool,
    /// When the request in flight times out.
    deadline: Instant,
    head: Vec<u8>,
    buf: Vec<u8>,
    /// What one read fills (zeroed once, not per read).
    scratch: Vec<u8>,
    /// The `Retry-After` header of the last response read, when it had one.
    pub retry_after: Option<String>,
}

/// Why a request failed.
#[derive(Debug)]
pub enum Failure {
    /// Connecting, sending or waiting for the response head (`request failed: ...`).
    Request(String),
    /// Reading the response's body (`reading the response: ...`).
    Body(String),
}

impl Client {
    /// A client whose every phase waits at most `timeout`.
    pub fn new(timeout: Duration) -> Client {
        Client {
            timeout,
            conn: None,
            fresh: true,
            deadline: Instant::now(),
            head: Vec::with_capacity(512),
            buf: Vec::with_capacity(16 * 1024),
            scratch: vec![0; 64 * 1024],
            retry_after: None,
        }
    }

    fn connect(&self, addr: &str) -> std::io::Result<TcpStream> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&a, self.timeout) {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    s.set_read_timeout(Some(self.timeout))?;
                    s.set_write_timeout(Some(self.timeout))?;
                    return Ok(s);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{addr} resolves to no address"),
            )
        }))
    }

    /// The bytes of one request to `t`: its head and body, ready for [`Client::begin`].
    pub fn encode(
        method: &str,
        t: &Target<'_>,
        headers: &[(String, String)],
        payload: Option<&[u8]>,
        out: &mut Vec<u8>,
    ) {
        out.clear();
        let _ = write!(out, "{method} {} HTTP/1.1\r\nHost: {}\r\n", t.path, t.host);
        let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        if payload.is_some() && !has("content-type") {
            out.extend_from_slice(b"Content-Type: application/json\r\n");
        }
        if !has("user-agent") {
            out.extend_from_slice(
                concat!("User-Agent: ranklab/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
            );
        }
        for (k, v) in headers {
            let _ = write!(out, "{k}: {v}\r\n");
        }
        if let Some(p) = payload {
            let _ = write!(out, "Content-Length: {}\r\n\r\n", p.len());
            out.extend_from_slice(p);
        } else {
            out.extend_from_slice(b"\r\n");
        }
    }

    /// Sends one request and reads its response: the status and the body (in `body`, which is
    /// cleared first).
    pub fn call(
        &mut self,
        method: &str,
        t: &Target<'_>,
        headers: &[(String, String)],
        payload: Option<&[u8]>,
        body: &mut Vec<u8>,
    ) -> Result<u16, Failure> {
        let mut request = std::mem::take(&mut self.head);
        Client::encode(method, t, headers, payload, &mut request);
        let result = self
            .begin(&t.connect, &request)
            .and_then(|()| self.finish(&t.connect, &request, body));
        self.head = request;
        result
    }

    /// Writes a request (from [`Client::encode`]) to `connect`, on the open connection when it
    /// goes there, else on a new one; its response is read by [`Client::finish`]. Between the
    /// two the caller may do other work while the engine answers.
    pub fn begin(&mut self, connect: &str, request: &[u8]) -> Result<(), Failure> {
        let reused = matches!(&self.conn, Some((a, _)) if *a == connect);
        if !reused {
            self.conn = None;
        }
        self.fresh = !reused;
        loop {
            if self.conn.is_none() {
                let s = self
                    .connect(connect)
                    .map_err(|e| Failure::Request(format!("connecting to {connect}: {e}")))?;
                self.conn = Some((connect.to_string(), s));
            }
            self.deadline = Instant::now() + self.timeout;
            let (_, s) = self.conn.as_mut().expect("connected");
            match s.write_all(request) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    self.conn = None;
                    let f = Failure::Request(format!("sending: {e}"));
                    // A reused connection the engine closed while idle: once more, on a new one.
                    if is_timeout(&e) || self.fresh {
                        return Err(f);
                    }
                    self.fresh = true;
                }
            }
        }
    }

    /// Reads the response to the request [`Client::begin`] wrote: the status, and the body in
    /// `body` (cleared first). When a reused connection turns out closed before any byte of a
    /// response arrived, `request` is sent again on a new connection, once.
    pub fn finish(
        &mut self,
        connect: &str,
        request: &[u8],
        body: &mut Vec<u8>,
    ) -> Result<u16, Failure> {
        loop {
            match self.response(body) {
                Ok((status, keep)) => {
                    if !keep {
                        self.conn = None;
                    }
                    return Ok(status);
                }
                Err(Attempt::Stale(_)) if !self.fresh => {
                    self.conn = None;
                    // Not reused now: a second failure is final.
                    self.begin(connect, request)?;
                }
                Err(Attempt::Stale(f) | Attempt::Failed(f)) => {
                    self.conn = None;
                    return Err(f);
                }
            }
        }
    }

    /// Reads the response on the connection [`Client::begin`] wrote to; whether the connection
    /// can be reused.
    fn response(&mut self, body: &mut Vec<u8>) -> Result<(u16, bool), Attempt> {
        self.retry_after = None;
        let Some((_, s)) = self.conn.as_mut() else {
            return Err(Attempt::Failed(Failure::Request(
                "no request was sent".into(),
            )));
        };
        let mut incoming = Incoming {
            s,
            scratch: &mut self.scratch,
            buf: &mut self.buf,
            deadline: self.deadline,
            timeout: self.timeout,
        };
        let r = incoming.response(body)?;
        self.retry_after = r.retry_after;
        Ok((r.status, r.keep))
    }
}

/// What a response gave besides its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status (never 1xx: interim responses are skipped).
    pub status: u16,
    /// Whether the connection can carry the next request.
    pub keep: bool,
    /// The `Retry-After` header, when the response had one.
    pub retry_after: Option<String>,
}

/// Reads one response from `s`: its head (after any interim 1xx responses), then its body into
/// `body` (cleared first), failing as a timeout once `deadline` has passed. `buf` receives the
/// bytes as read (cleared first); each read fills at most `scratch`. What [`Client::finish`]
/// does on its connection; public for the fuzz target (`fuzz/fuzz_targets/http_response.rs`).
pub fn read_response<R: Read>(
    s: &mut R,
    deadline: Instant,
    timeout: Duration,
    buf: &mut Vec<u8>,
    scratch: &mut [u8],
    body: &mut Vec<u8>,
) -> Result<Response, Attempt> {
    Incoming {
        s,
        scratch,
        buf,
        deadline,
        timeout,
    }
    .response(body)
}

/// A response's head, parsed.
struct Head {
    status: u16,
    /// Its length in bytes (where the body starts in the buffer).
    len: usize,
    framing: Framing,
    /// Whether the head lets the connection be reused.
    keep: bool,
    retry_after: Option<String>,
}

/// One response being read: the stream, the bytes read so far (`buf`), the deadline.
struct Incoming<'a, R> {
    s: &'a mut R,
    scratch: &'a mut [u8],
    buf: &'a mut Vec<u8>,
    deadline: Instant,
    timeout: Duration,
}

impl<R: Read> Incoming<'_, R> {
    /// The head, then the body by its framing.
    fn response(&mut self, body: &mut Vec<u8>) -> Result<Response, Attempt> {
        self.buf.clear();
        let head = self.head()?;
        body.clear();
        let at = head.len;
        let keep = match head.framing {
            Framing::Length(n) => self.body_by_length(at, n, body)? && head.keep,
            Framing::Chunked => self.body_chunked(at, body)? && head.keep,
            Framing::Close => self.body_to_close(at, body)?,
            Framing::None => head.keep && self.buf.len() == at,
        };
        Ok(Response {
            status: head.status,
            keep,
            retry_after: head.retry_after,
        })
    }

    fn timed_out(&self) -> Failure {
        Failure::Request(format!(
            "timed out after {} ms waiting for the response",
            self.timeout.as_millis()
        ))
    }

    /// Reads until a final (not 1xx) response head has arrived and parses it.
    fn head(&mut self) -> Result<Head, Attempt> {
        let mut received = false;
        loop {
            if let Some(head) = self.parse_head()? {
                return Ok(head);
            }
            // Nothing of a response yet: the engine may have closed an idle connection.
            let stale_or_failed = |f| {
                if received {
                    Attempt::Failed(f)
                } else {
                    Attempt::Stale(f)
                }
            };
            let got = read_more(self.s, self.scratch, self.buf).map_err(|e| {
                if is_timeout(&e) {
                    // A slow engine, not a closed connection: not sent again.
                    Attempt::Failed(self.timed_out())
                } else {
                    stale_or_failed(Failure::Request(format!("waiting for the response: {e}")))
                }
            })?;
            if got == 0 {
                return Err(stale_or_failed(Failure::Request(
                    "the engine closed the connection before it answered".into(),
                )));
            }
            received = true;
        }
    }

    /// The head in `buf`, once complete (interim responses before it are dropped from `buf`);
    /// None while more bytes are needed.
    fn parse_head(&mut self) -> Result<Option<Head>, Attempt> {
        while !self.buf.is_empty() {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut r = httparse::Response::new(&mut headers);
            match r.parse(self.buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let status = r.code.unwrap_or(0);
                    if (100..200).contains(&status) {
                        // An interim response (100 Continue): the real one follows.
                        self.buf.drain(..n);
                        continue;
                    }
                    let (framing, keep) =
                        framing(&r, status).map_err(|e| Attempt::Failed(Failure::Body(e)))?;
                    let retry_after = r
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case("retry-after"))
                        .map(|h| String::from_utf8_lossy(h.value).into_owned());
                    return Ok(Some(Head {
                        status,
                        len: n,
                        framing,
                        keep,
                        retry_after,
                    }));
                }
                Ok(httparse::Status::Partial) => {
                    if self.buf.len() > 1 << 20 {
                        return Err(Attempt::Failed(Failure::Request(
                            "the response head is larger than 1 MiB".into(),
                        )));
                    }
                    if Instant::now() > self.deadline {
                        return Err(Attempt::Failed(self.timed_out()));
                    }
                    return Ok(None);
                }
                Err(e) => {
                    return Err(Attempt::Failed(Failure::Request(format!(
                        "the response is not HTTP ({e}): {}",
                        cut(&String::from_utf8_lossy(self.buf), 200)
                    ))))
                }
            }
        }
        Ok(None)
    }

    /// One more read of the body, within the deadline: the bytes read (0: the engine closed
    /// the connection).
    fn more(&mut self) -> Result<usize, Attempt> {
        if Instant::now() > self.deadline {
            return Err(Attempt::Failed(self.timed_out()));
        }
        read_more(self.s, self.scratch, self.buf).map_err(|e| body_err(e.to_string()))
    }

    /// A body of `n` bytes at `at`; whether no byte follows it.
    fn body_by_length(&mut self, at: usize, n: usize, body: &mut Vec<u8>) -> Result<bool, Attempt> {
        if n > MAX_BODY {
            return Err(too_large());
        }
        while self.buf.len() - at < n {
            if self.more()? == 0 {
                return Err(body_err(format!(
                    "the connection closed after {} of {n} bytes",
                    self.buf.len() - at
                )));
            }
        }
        body.extend_from_slice(&self.buf[at..at + n]);
        // Bytes beyond the body: not a response to anything sent; do not reuse.
        Ok(self.buf.len() == at + n)
    }

    /// A chunked body starting at `at`, through its trailer; whether no byte follows it.
    fn body_chunked(&mut self, mut at: usize, body: &mut Vec<u8>) -> Result<bool, Attempt> {
        loop {
            match httparse::parse_chunk_size(&self.buf[at..]) {
                Ok(httparse::Status::Complete((i, size))) => {
                    let size = usize::try_from(size).unwrap_or(usize::MAX);
                    if size == 0 {
                        let end = self.trailer_end(at + i)?;
                        return Ok(end == self.buf.len());
                    }
                    at = self.chunk(at + i, size, body)?;
                }
                Ok(httparse::Status::Partial) => {
                    if self.more()? == 0 {
                        return Err(body_err(
                            "the connection closed inside the chunked body".into(),
                        ));
                    }
                }
                Err(_) => return Err(body_err("an invalid chunk size in the chunked body".into())),
            }
        }
    }

    /// A chunk's `size` bytes at `start` and the CRLF after them; where the next chunk starts.
    fn chunk(&mut self, start: usize, size: usize, body: &mut Vec<u8>) -> Result<usize, Attempt> {
        // `body` never holds more than MAX_BODY bytes, so this cannot overflow.
        if size > MAX_BODY - body.len() {
            return Err(too_large());
        }
        while self.buf.len() < start + size + 2 {
            if self.more()? == 0 {
                return Err(body_err("the connection closed inside a chunk".into()));
            }
        }
        body.extend_from_slice(&self.buf[start..start + size]);
        if &self.buf[start + size..start + size + 2] != b"\r\n" {
            return Err(body_err("a chunk does not end with CRLF".into()));
        }
        Ok(start + size + 2)
    }

    /// The trailer fields after the last chunk, then an empty line; where the body ends.
    fn trailer_end(&mut self, mut at: usize) -> Result<usize, Attempt> {
        loop {
            if let Some(end) = find(&self.buf[at..], b"\r\n") {
                at += end + 2;
                if end == 0 {
                    return Ok(at);
                }
                continue;
            }
            if self.more()? == 0 {
                return Err(body_err(
                    "the connection closed in the chunked trailer".into(),
                ));
            }
        }
    }

    /// A body delimited by the end of the connection (never reused after).
    fn body_to_close(&mut self, at: usize, body: &mut Vec<u8>) -> Result<bool, Attempt> {
        loop {
            if self.buf.len() - at > MAX_BODY {
                return Err(too_large());
            }
            if self.more()? == 0 {
                break;
            }
        }
        body.extend_from_slice(&self.buf[at..]);
        Ok(false)
    }
}

fn body_err(e: String) -> Attempt {
    Attempt::Failed(Failure::Body(e))
}

fn too_large() -> Attempt {
    body_err(format!("the body is larger than {MAX_BODY} bytes"))
}

/// Why reading a response failed.
#[derive(Debug)]
pub enum Attempt {
    /// Failed before any byte of a response arrived on a connection that may have been closed
    /// by the engine while idle.
    Stale(Failure),
    /// Failed otherwise.
    Failed(Failure),
}

/// How a response's body is delimited.
enum Framing {
    Length(usize),
    Chunked,
    Close,
    None,
}

/// The body's framing and whether the connection stays open after it (RFC 9112 section 6.3).
fn framing(r: &httparse::Response<'_, '_>, status: u16) -> Result<(Framing, bool), String> {
    let header = |name: &'static str| {
        r.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
    };
    let http11 = r.version == Some(1);
    let tokens: Vec<String> = header("connection")
        .flat_map(|v| {
            v.split(',')
                .map(|t| t.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let keep = if http11 {
        !tokens.iter().any(|t| t == "close")
    } else {
        tokens.iter().any(|t| t == "keep-alive")
    };
    if status == 204 || status == 304 {
        return Ok((Framing::None, keep));
    }
    if let Some(te) = header("transfer-encoding").next_back() {
        if te.split(',').map(str::trim).next_back() == Some("chunked") {
            return Ok((Framing::Chunked, keep));
        }
        return Ok((Framing::Close, false));
    }
    let lengths: Vec<String> = header("content-length").collect();
    if let Some(first) = lengths.first() {
        if lengths.iter().any(|l| l != first) {
            return Err("the response has differing Content-Length headers".into());
        }
        return first
            .trim()
            .parse::<usize>()
            .map(|n| (Framing::Length(n), keep))
            .map_err(|_| format!("the response's Content-Length {first:?} is not a number"));
    }
    Ok((Framing::Close, false))
}

/// Reads what the socket has (one `read`, into `scratch`) and appends it to `buf`; the bytes
/// read.
fn read_more<R: Read>(s: &mut R, scratch: &mut [u8], buf: &mut Vec<u8>) -> std::io::Result<usize> {
    loop {
        match s.read(scratch) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(n) => {
                buf.extend_from_slice(&scratch[..n]);
                return Ok(n);
            }
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// The first `n` bytes of `s` (at a character boundary) and `...` when it is longer, as
/// `external::cut` words it; here so that this file stands alone (the fuzz target includes it).
fn cut(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_splits_into_address_host_and_target() {
        let t = target("http://127.0.0.1:9200/docs/_search?q=a%20b#frag").unwrap();
        assert_eq!(
            (t.connect.as_str(), t.host, t.path.as_str()),
            ("127.0.0.1:9200", "127.0.0.1:9200", "/docs/_search?q=a%20b")
        );
        let t = target("HTTP://search.internal?q=x").unwrap();
        assert_eq!(
            (t.connect.as_str(), t.host, t.path.as_str()),
            ("search.internal:80", "search.internal", "/?q=x")
        );
        let t = target("http://[::1]:8108/multi_search").unwrap();
        assert_eq!(t.connect, "[::1]:8108");
        let t = target("http://[::1]/x").unwrap();
        assert_eq!(t.connect, "[::1]:80");
        assert_eq!(target("https://127.0.0.1/x"), None);
        assert_eq!(target("http://user:pw@127.0.0.1/x"), None);
        assert_eq!(target("http:///x"), None);
    }

    /// A server written here (std::net) answers with each framing; the client reads the body
    /// the server sent, reuses the connection only when the framing allows, and sends a request
    /// again on a new connection when the engine closed the reused one while it was idle.
    #[test]
    fn every_framing_is_read_and_a_closed_idle_connection_is_reopened() {
        use std::net::TcpListener;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        // Per connection, the answers it gives (one per request read), then it is closed.
        let plan: Vec<Vec<&'static [u8]>> = vec![
            vec![
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n",
            ],
            vec![b"HTTP/1.0 503 Busy\r\n\r\nbusy, closed"],
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"],
        ];
        let server = std::thread::spawn(move || {
            let mut requests = Vec::new();
            for answers in plan {
                let (mut s, _) = l.accept().unwrap();
                for a in answers {
                    let mut req = vec![0u8; 4096];
                    let mut got = 0;
                    while !req[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                        got += s.read(&mut req[got..]).unwrap();
                    }
                    requests.push(String::from_utf8_lossy(&req[..got]).to_string());
                    s.write_all(a).unwrap();
                }
            }
            requests
        });
        let url = format!("http://127.0.0.1:{port}/s?q=1");
        let t = target(&url).unwrap();
        let mut c = Client::new(Duration::from_secs(10));
        let mut body = Vec::new();
        let mut call = |c: &mut Client| {
            let s = c.call(
                "POST",
                &t,
                &[("X-Key".into(), "v".into())],
                Some(b"{}"),
                &mut body,
            );
            (
                s.map_err(|e| format!("{e:?}")),
                String::from_utf8_lossy(&body).to_string(),
            )
        };
        assert_eq!(call(&mut c), (Ok(200), "hello".into()));
        assert_eq!(call(&mut c), (Ok(200), "abcde".into()));
        // The first connection was closed after its second answer: sent again on the second.
        assert_eq!(call(&mut c), (Ok(503), "busy, closed".into()));
        assert_eq!(call(&mut c), (Ok(200), "ok".into()));
        let requests = server.join().unwrap();
        assert_eq!(requests.len(), 4);
        let port = port.to_string();
        let want = format!("POST /s?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nUser-Agent: ranklab/{}\r\nX-Key: v\r\nContent-Length: 2\r\n\r\n", env!("CARGO_PKG_VERSION"));
        assert!(requests[0].starts_with(&want), "{:?}", requests[0]);
    }

    /// A head that does not end is refused once past 1 MiB rather than read on, and a chunk
    /// size of 2^64 - 1 after a first chunk is refused as too large (the size check itself
    /// overflowed on it, a panic: fuzz/regressions/http_response/chunk-size-u64-max).
    #[test]
    fn an_endless_head_and_a_huge_chunk_are_refused() {
        let read = |bytes: &[u8]| {
            let hour = Duration::from_secs(3600);
            let (mut buf, mut scratch, mut body) = (Vec::new(), vec![0; 64 * 1024], Vec::new());
            let mut s = bytes;
            match read_response(
                &mut s,
                Instant::now() + hour,
                hour,
                &mut buf,
                &mut scratch,
                &mut body,
            ) {
                Ok(r) => format!("{r:?}"),
                Err(Attempt::Stale(f) | Attempt::Failed(f)) => format!("{f:?}"),
            }
        };
        let mut head = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
        head.resize((1 << 20) + 100, b'a');
        assert_eq!(
            read(&head),
            "Request(\"the response head is larger than 1 MiB\")"
        );
        let huge = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\nffffffffffffffff\r\nab\r\n0\r\n\r\n";
        assert_eq!(
            read(huge),
            "Body(\"the body is larger than 67108864 bytes\")"
        );
    }

    /// `begin` puts the request on the wire and returns without waiting for the answer (the
    /// server sees the request before `finish` is called, and answers only after the test let
    /// it); `finish` then reads that answer; the next request goes on the same connection.
    #[test]
    fn begin_sends_the_request_and_finish_reads_its_answer_later() {
        use std::net::TcpListener;
        use std::sync::mpsc;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (seen_tx, seen_rx) = mpsc::channel::<String>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            for answer in ["first", "second"] {
                let mut req = vec![0u8; 4096];
                let mut got = 0;
                while !req[..got].windows(2).any(|w| w == b"}}") {
                    got += s.read(&mut req[got..]).unwrap();
                }
                seen_tx
                    .send(String::from_utf8_lossy(&req[..got]).to_string())
                    .unwrap();
                go_rx.recv().unwrap();
                let a = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{answer}",
                    answer.len()
                );
                s.write_all(a.as_bytes()).unwrap();
            }
            // One connection for both requests.
            l.set_nonblocking(true).unwrap();
            l.accept().is_err()
        });
        let url = format!("http://127.0.0.1:{port}/s");
        let t = target(&url).unwrap();
        let mut c = Client::new(Duration::from_secs(10));
        let mut body = Vec::new();
        for (payload, answer) in [(&b"{\"n\": {1}}"[..], "first"), (b"{\"n\": {2}}", "second")] {
            let mut request = Vec::new();
            Client::encode("POST", &t, &[], Some(payload), &mut request);
            c.begin(&t.connect, &request).unwrap();
            let seen = seen_rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert!(
                seen.ends_with(std::str::from_utf8(payload).unwrap()),
                "{seen:?}"
            );
            go_tx.send(()).unwrap();
            assert_eq!(c.finish(&t.connect, &request, &mut body).unwrap(), 200);
            assert_eq!(body, answer.as_bytes());
        }
        assert!(server.join().unwrap(), "a second connection was opened");
    }
}
