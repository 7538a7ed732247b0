//! Server-sent events to [`ChatChunk`]s: `eventsource-stream` over the response's
//! bytes, a provider-specific [`SseParser`], and the rules every stream shares — an
//! idle time limit between events, and a stream that ends before the provider's
//! end marker is an error, not a short answer.

use crate::secrets::Secrets;
use std::collections::VecDeque;
use std::time::Duration;

use eventsource_stream::{Event, Eventsource};
use futures::StreamExt;

use super::{ChatChunk, ChatStream, ModelError};
use crate::message::Message;

/// What a provider does with each event.
pub(crate) trait SseParser: Send + 'static {
    /// The chunks `event` yields; `Ok(true)` in the second place when it was the
    /// provider's end marker.
    fn on_event(&mut self, event: &Event, out: &mut Vec<ChatChunk>) -> Result<bool, ModelError>;

    /// The whole message, when the stream ended: `complete` says whether the end
    /// marker was seen. Errors for a truncated stream.
    fn finish(&mut self, complete: bool) -> Result<Message, ModelError>;
}

struct State<S, P> {
    events: S,
    parser: P,
    queue: VecDeque<ChatChunk>,
    finished: bool,
}

/// A [`ChatStream`] over a successful streaming response.
pub(crate) fn chat_stream<P: SseParser>(
    provider: &'static str,
    id: String,
    resp: reqwest::Response,
    parser: P,
    idle: Duration,
    secrets: Secrets,
) -> ChatStream {
    let events = super::limits::bounded_stream(resp).eventsource();
    let state = State {
        events,
        parser,
        queue: VecDeque::new(),
        finished: false,
    };
    let stream = futures::stream::unfold(Some(state), move |st| {
        let secrets = secrets.clone();
        async move {
            let mut st = st?;
            let fail = |e: ModelError| Some((Err(e.redact(&secrets)), None));
            loop {
                if let Some(c) = st.queue.pop_front() {
                    return Some((Ok(c), Some(st)));
                }
                if st.finished {
                    return None;
                }
                let next = match tokio::time::timeout(idle, st.events.next()).await {
                    Ok(n) => n,
                    Err(_) => {
                        return fail(ModelError::Timeout {
                            provider,
                            after: idle,
                        })
                    }
                };
                match next {
                    None => match st.parser.finish(false) {
                        Ok(m) => {
                            st.queue.push_back(ChatChunk::Done(Box::new(m)));
                            st.finished = true;
                        }
                        Err(e) => return fail(e),
                    },
                    Some(Err(e)) => {
                        return fail(ModelError::Connection {
                            provider,
                            message: format!("the event stream broke: {e}"),
                        })
                    }
                    Some(Ok(ev)) => {
                        let mut out = Vec::new();
                        match st.parser.on_event(&ev, &mut out) {
                            Ok(done) => {
                                st.queue.extend(out);
                                if done {
                                    match st.parser.finish(true) {
                                        Ok(m) => st.queue.push_back(ChatChunk::Done(Box::new(m))),
                                        Err(e) => return fail(e),
                                    }
                                    st.finished = true;
                                }
                            }
                            Err(e) => return fail(e),
                        }
                    }
                }
            }
        }
    });
    ChatStream::new(provider, id, Box::pin(stream))
}

/// An event carrying `data` (its other fields empty): what the tests feed a parser.
#[cfg(test)]
pub(crate) fn data_event(data: &str) -> Event {
    Event {
        data: data.into(),
        ..Default::default()
    }
}

/// The JSON of an event's data, or a clear error.
pub(crate) fn event_json(
    provider: &'static str,
    event: &Event,
) -> Result<serde_json::Value, ModelError> {
    serde_json::from_str(&event.data).map_err(|e| ModelError::Response {
        provider,
        message: format!(
            "a stream event is not JSON ({e}): {}",
            super::shorten(&event.data, 200)
        ),
    })
}
