//! The TCP listener every Folio HTTP surface is served from.

use axum::serve::{ListenerExt, TapIo};
use tokio::net::{TcpListener, TcpStream};

/// A listener whose accepted connections have Nagle's algorithm off.
pub type NoDelayListener = TapIo<TcpListener, fn(&mut TcpStream)>;

/// Wraps `listener` so every accepted connection sets `TCP_NODELAY`.
///
/// Folio answers with many small writes (one event line at a time, a short reply). With Nagle's
/// algorithm on, a kept-alive connection holds each small write back until the client's delayed
/// ACK arrives, about 40 ms on Linux, so every streamed turn would stall that long.
pub fn no_delay(listener: TcpListener) -> NoDelayListener {
    listener.tap_io(set_no_delay as fn(&mut TcpStream))
}

fn set_no_delay(tcp: &mut TcpStream) {
    if let Err(err) = tcp.set_nodelay(true) {
        tracing::warn!("cannot turn off Nagle's algorithm (TCP_NODELAY) on a connection: {err}");
    }
}
