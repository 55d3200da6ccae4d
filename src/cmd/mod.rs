pub mod bench;
pub mod docs;
pub mod emulate;
pub mod record;
pub mod watch;
pub mod watch_tui;
