//! [`StreamEvent`]: an appended event as a session's streams share it.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use folio_protocol::Event;

/// A session's event as its streams carry it: one copy shared by every stream of the session,
/// with its NDJSON line serialized once, by the first stream that writes it.
#[derive(Debug)]
pub struct StreamEvent {
    event: Event,
    line: OnceLock<Box<[u8]>>,
}

impl StreamEvent {
    /// `event`, ready to be shared between streams.
    pub(crate) fn shared(event: Event) -> Arc<StreamEvent> {
        Arc::new(StreamEvent {
            event,
            line: OnceLock::new(),
        })
    }

    /// The event.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// The event as one NDJSON line: its JSON, then a newline.
    pub fn line(&self) -> &[u8] {
        self.line.get_or_init(|| {
            let mut line = Vec::new();
            self.event.write_line(&mut line);
            line.into_boxed_slice()
        })
    }
}

impl Deref for StreamEvent {
    type Target = Event;

    fn deref(&self) -> &Event {
        &self.event
    }
}
