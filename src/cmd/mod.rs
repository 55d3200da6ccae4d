pub mod bench;
pub mod docs;
pub mod emulate;
pub mod find_max;
pub mod record;
pub mod watch;
pub mod watch_tui;
