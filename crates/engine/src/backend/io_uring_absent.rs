//! io_uring exists only on Linux. Elsewhere the type is uninhabited: it can never be made
//! (`new` says why), so the code that queues on it compiles unchanged and never runs.

use std::convert::Infallible;
use std::io;
use std::os::fd::RawFd;

use super::{Backend, IoRequest, Submitted};

pub struct Uring(Infallible);

fn unsupported() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "io_uring exists only on Linux")
}

impl Uring {
    pub fn new(_depth: u32) -> io::Result<Uring> {
        Err(unsupported())
    }

    pub fn with_eventfd(_entries: u32, _eventfd: RawFd) -> io::Result<Uring> {
        Err(unsupported())
    }
}

impl Backend for Uring {
    fn name(&self) -> &'static str {
        match self.0 {}
    }

    fn submit(&mut self, _req: &IoRequest) -> io::Result<Submitted> {
        match self.0 {}
    }
}
