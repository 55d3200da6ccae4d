//! The client side of the NBD protocol (doc/proto.md of the NBD project): the URI, the
//! fixed-newstyle handshake and the transmission phase's requests and simple replies.
//!
//! Written here because the one Rust NBD client crate does one request at a time behind
//! Read + Write + Seek, and fio's engine keeps `iodepth` requests in flight on one
//! connection, which is what makes a queue-depth figure mean something.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

const FLAG_FIXED_NEWSTYLE: u16 = 1;
const FLAG_NO_ZEROES: u16 = 2;
const OPT_EXPORT_NAME: u32 = 1;
const OPT_GO: u32 = 7;
const REP_ACK: u32 = 1;
const REP_INFO: u32 = 3;
const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
const INFO_EXPORT: u16 = 0;

const TFLAG_READ_ONLY: u16 = 1 << 1;
const TFLAG_SEND_FLUSH: u16 = 1 << 2;
const TFLAG_SEND_TRIM: u16 = 1 << 5;

/// A request's kind (the protocol's command numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Read = 0,
    Write = 1,
    Disconnect = 2,
    Flush = 3,
    Trim = 4,
}

/// Where the server listens, from an NBD URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    Tcp { host: String, port: u16 },
    Unix { socket: String },
}

/// A parsed NBD URI: `nbd://host[:port]/[export]` or `nbd+unix:///[export]?socket=PATH`,
/// the forms libnbd (and so fio's engine) takes without TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uri {
    pub address: Address,
    pub export: String,
}

fn decode(part: &str) -> String {
    percent_encoding::percent_decode_str(part)
        .decode_utf8_lossy()
        .into_owned()
}

impl Uri {
    pub fn parse(text: &str) -> Result<Uri, String> {
        let accepted = "nbd://HOST[:PORT]/[EXPORT] or nbd+unix:///[EXPORT]?socket=PATH";
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("'{text}' is not an NBD URI ({accepted})"))?;
        let (before_query, query) = match rest.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match before_query.find('/') {
            Some(i) => (&before_query[..i], &before_query[i + 1..]),
            None => (before_query, ""),
        };
        let export = decode(path);
        let params: Vec<(&str, &str)> = query
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect();
        match scheme {
            "nbd" => {
                if let Some((k, _)) = params.first() {
                    return Err(format!(
                        "'{text}': the query parameter '{k}' is not one sinkrate's NBD client takes ({accepted})"
                    ));
                }
                let (host, port) = split_host_port(authority)
                    .ok_or_else(|| format!("'{text}': the port is not a number ({accepted})"))?;
                Ok(Uri {
                    address: Address::Tcp {
                        host: if host.is_empty() {
                            "localhost".into()
                        } else {
                            host
                        },
                        port: port.unwrap_or(10809),
                    },
                    export,
                })
            }
            "nbd+unix" => {
                if !authority.is_empty() {
                    return Err(format!(
                        "'{text}': a Unix-socket URI names no host ({accepted})"
                    ));
                }
                let mut socket = None;
                for (k, v) in params {
                    match k {
                        "socket" => socket = Some(decode(v)),
                        other => {
                            return Err(format!(
                                "'{text}': the query parameter '{other}' is not one sinkrate's NBD client takes ({accepted})"
                            ))
                        }
                    }
                }
                let socket = socket
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| format!("'{text}' names no socket ({accepted})"))?;
                Ok(Uri {
                    address: Address::Unix { socket },
                    export,
                })
            }
            "nbds" | "nbds+unix" | "nbd+vsock" | "nbds+vsock" => Err(format!(
                "'{text}': {scheme}:// (TLS or vsock) is not supported by sinkrate's NBD client ({accepted})"
            )),
            other => Err(format!(
                "'{text}': the scheme '{other}' is not an NBD one ({accepted})"
            )),
        }
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; `None` when the port is not a number.
fn split_host_port(authority: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse().ok()?),
        None => None,
    };
    Some((decode(host), port))
}

/// A connection in the transmission phase.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    /// Ends the connection cleanly (NBD_CMD_DISC), as a server expects of a client.
    pub fn disconnect(&mut self) {
        let _ = self.write_all(&request(Command::Disconnect, 0, 0, 0));
        self.shutdown();
    }

    pub fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What the server told of its export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Export {
    pub size: u64,
    flags: u16,
}

impl Export {
    pub fn read_only(&self) -> bool {
        self.flags & TFLAG_READ_ONLY != 0
    }
    pub fn can_flush(&self) -> bool {
        self.flags & TFLAG_SEND_FLUSH != 0
    }
    pub fn can_trim(&self) -> bool {
        self.flags & TFLAG_SEND_TRIM != 0
    }
}

fn protocol(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("NBD handshake: {what}"))
}

fn read_u16(r: &mut impl Read) -> io::Result<u16> {
    let mut b = [0; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn send_option(s: &mut Stream, option: u32, data: &[u8]) -> io::Result<()> {
    let mut msg = Vec::with_capacity(16 + data.len());
    msg.extend_from_slice(&IHAVEOPT.to_be_bytes());
    msg.extend_from_slice(&option.to_be_bytes());
    msg.extend_from_slice(&(data.len() as u32).to_be_bytes());
    msg.extend_from_slice(data);
    s.write_all(&msg)
}

/// Connects to the server and negotiates the export (NBD_OPT_GO, or NBD_OPT_EXPORT_NAME
/// from a server too old for it).
pub fn connect(uri: &Uri) -> io::Result<(Stream, Export)> {
    let mut s = match &uri.address {
        Address::Tcp { host, port } => {
            let t = TcpStream::connect((host.as_str(), *port))?;
            // Requests are written whole; Nagle would hold small ones back.
            t.set_nodelay(true)?;
            Stream::Tcp(t)
        }
        Address::Unix { socket } => Stream::Unix(UnixStream::connect(socket)?),
    };
    if read_u64(&mut s)? != NBDMAGIC {
        return Err(protocol("the server did not greet as an NBD server"));
    }
    if read_u64(&mut s)? != IHAVEOPT {
        return Err(protocol(
            "the server speaks only the old-style protocol (sinkrate needs fixed newstyle)",
        ));
    }
    let server_flags = read_u16(&mut s)?;
    if server_flags & FLAG_FIXED_NEWSTYLE == 0 {
        return Err(protocol(
            "the server does not offer fixed newstyle negotiation",
        ));
    }
    let no_zeroes = server_flags & FLAG_NO_ZEROES != 0;
    let client_flags = u32::from(FLAG_FIXED_NEWSTYLE) | if no_zeroes { 2 } else { 0 };
    s.write_all(&client_flags.to_be_bytes())?;

    let name = uri.export.as_bytes();
    let mut go = Vec::with_capacity(6 + name.len());
    go.extend_from_slice(&(name.len() as u32).to_be_bytes());
    go.extend_from_slice(name);
    go.extend_from_slice(&0u16.to_be_bytes());
    send_option(&mut s, OPT_GO, &go)?;
    let mut export = None;
    loop {
        if read_u64(&mut s)? != OPT_REPLY_MAGIC {
            return Err(protocol("a reply without the option reply magic"));
        }
        let _option = read_u32(&mut s)?;
        let kind = read_u32(&mut s)?;
        let len = read_u32(&mut s)? as usize;
        let mut data = vec![0; len];
        s.read_exact(&mut data)?;
        match kind {
            REP_INFO if len >= 12 && u16::from_be_bytes([data[0], data[1]]) == INFO_EXPORT => {
                let mut size = [0; 8];
                size.copy_from_slice(&data[2..10]);
                export = Some(Export {
                    size: u64::from_be_bytes(size),
                    flags: u16::from_be_bytes([data[10], data[11]]),
                });
            }
            REP_INFO => {}
            REP_ACK => {
                return export.map(|e| (s, e)).ok_or_else(|| {
                    protocol("the server ended the negotiation without the export's size")
                })
            }
            REP_ERR_UNSUP => return export_name(s, name, no_zeroes),
            err if err & (1 << 31) != 0 => {
                let text = String::from_utf8_lossy(&data).into_owned();
                let why = match err - (1 << 31) {
                    2 => "refused by the server's policy",
                    3 => "invalid",
                    4 => "not available on the server's platform",
                    5 => "the server requires TLS",
                    6 => "no such export on the server",
                    7 => "the server is shutting down",
                    8 => "the server requires block size negotiation",
                    9 => "too big",
                    _ => "refused",
                };
                return Err(io::Error::other(format!(
                    "export '{}': {why}{}",
                    uri.export,
                    if text.is_empty() {
                        String::new()
                    } else {
                        format!(" ({text})")
                    }
                )));
            }
            _ => {}
        }
    }
}

fn export_name(mut s: Stream, name: &[u8], no_zeroes: bool) -> io::Result<(Stream, Export)> {
    send_option(&mut s, OPT_EXPORT_NAME, name)?;
    let size = read_u64(&mut s)?;
    let flags = read_u16(&mut s)?;
    if !no_zeroes {
        let mut zeroes = [0; 124];
        s.read_exact(&mut zeroes)?;
    }
    Ok((s, Export { size, flags }))
}

/// The 28-byte header of a request; a write's data follows it.
pub fn request(command: Command, cookie: u64, offset: u64, len: u32) -> [u8; 28] {
    let mut h = [0; 28];
    h[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    h[6..8].copy_from_slice(&(command as u16).to_be_bytes());
    h[8..16].copy_from_slice(&cookie.to_be_bytes());
    h[16..24].copy_from_slice(&offset.to_be_bytes());
    h[24..28].copy_from_slice(&len.to_be_bytes());
    h
}

/// A simple reply's header: (error, cookie). A successful read's data follows it.
pub fn read_reply(r: &mut impl Read) -> io::Result<(u32, u64)> {
    let mut h = [0; 16];
    r.read_exact(&mut h)?;
    let magic = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    if magic != SIMPLE_REPLY_MAGIC {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("NBD reply with magic 0x{magic:08x} (the server sent a reply this client did not ask for)"),
        ));
    }
    let error = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
    let mut cookie = [0; 8];
    cookie.copy_from_slice(&h[8..16]);
    Ok((error, u64::from_be_bytes(cookie)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_as_libnbd_takes_them() {
        let u = Uri::parse("nbd+unix://?socket=/tmp/nbdkitX/socket").expect("nbdkit's $uri");
        assert_eq!(
            u.address,
            Address::Unix {
                socket: "/tmp/nbdkitX/socket".into()
            }
        );
        assert_eq!(u.export, "");
        let u = Uri::parse("nbd+unix:///disk%201?socket=/var/tmp/a%20b").expect("escaped");
        assert_eq!(u.export, "disk 1");
        assert_eq!(
            u.address,
            Address::Unix {
                socket: "/var/tmp/a b".into()
            }
        );
        let u = Uri::parse("nbd://example.com/x").expect("tcp");
        assert_eq!(
            u.address,
            Address::Tcp {
                host: "example.com".into(),
                port: 10809
            }
        );
        let u = Uri::parse("nbd://[::1]:2000/").expect("v6");
        assert_eq!(
            u.address,
            Address::Tcp {
                host: "::1".into(),
                port: 2000
            }
        );
        assert_eq!(u.export, "");
        for (bad, says) in [
            ("/tmp/sock", "not an NBD URI"),
            ("nbds://h/", "TLS"),
            ("nbd+unix:///", "names no socket"),
            ("nbd://h:x/", "port is not a number"),
            ("nbd+unix:///?socket=/s&tls=require", "'tls'"),
            ("http://h/", "not an NBD one"),
        ] {
            let e = Uri::parse(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_request_is_laid_out_as_the_protocol_says() {
        let h = request(Command::Write, 7, 0x1000, 512);
        assert_eq!(&h[0..4], &[0x25, 0x60, 0x95, 0x13]);
        assert_eq!(&h[4..8], &[0, 0, 0, 1]);
        assert_eq!(u64::from_be_bytes(h[8..16].try_into().expect("8")), 7);
        assert_eq!(u64::from_be_bytes(h[16..24].try_into().expect("8")), 0x1000);
        assert_eq!(u32::from_be_bytes(h[24..28].try_into().expect("4")), 512);
        let mut reply = Vec::new();
        reply.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
        reply.extend_from_slice(&5u32.to_be_bytes());
        reply.extend_from_slice(&9u64.to_be_bytes());
        assert_eq!(read_reply(&mut &reply[..]).expect("reply"), (5, 9));
    }
}
