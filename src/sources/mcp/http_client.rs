//! rmcp's reqwest client for streamable HTTP, with a message over the size limit
//! answered at once ([`message_limit`](super::message_limit)).
//!
//! rmcp enforces the limit itself (`max_sse_event_size`, set from
//! `max_message_bytes`; a JSON body has its fixed 16 MiB), but an SSE event over it
//! only ends the response stream, and the request then fails with "response stream
//! closed before its final response", which names no limit. This client hands the
//! request a stand-in error response naming the limit instead.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::{BoxStream, StreamExt};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use serde_json::Value;
use sse_stream::Sse;

use super::message_limit::too_large_response;

/// rmcp's fixed limit on a JSON (non-SSE) response body (`MAX_JSON_RESPONSE_SIZE`).
const JSON_BODY_LIMIT: usize = 16 * 1024 * 1024;

type Error = StreamableHttpError<reqwest::Error>;

#[derive(Clone)]
pub(crate) struct BoundedHttpClient {
    inner: reqwest::Client,
    limit: usize,
}

impl BoundedHttpClient {
    pub(crate) fn new(inner: reqwest::Client, limit: usize) -> Self {
        BoundedHttpClient { inner, limit }
    }
}

/// The reqwest client rmcp builds for itself (its builder is private): no idle
/// connection pool (rmcp: it avoids ~40 ms delayed-ACK stalls), and redirects
/// followed only to the same origin with the body kept (307 / 308), at most 10.
pub(crate) fn default_client() -> Result<reqwest::Client, reqwest::Error> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
}

/// The id of a request (a message the server must answer).
fn request_id(message: &ClientJsonRpcMessage) -> Option<Value> {
    match message {
        ClientJsonRpcMessage::Request(r) => serde_json::to_value(&r.id).ok(),
        _ => None,
    }
}

/// Whether rmcp ended an SSE stream because an event went over its size limit
/// (its error type is private: it is known by its text).
fn event_too_large(e: &SseError) -> bool {
    matches!(e, SseError::Body(b) if b.to_string().contains("exceeded the maximum size"))
}

/// rmcp calls the trait's `*_with_max_sse_event_size` methods with its transport-wide
/// `max_sse_event_size`, which is this client's `limit` (both are `max_message_bytes`,
/// see `rmcp_session`): their default bodies, which call the plain methods, serve,
/// and each request is made once, here, with `limit`.
impl StreamableHttpClient for BoundedHttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limit = self.limit;
        let id = request_id(&message);
        let response = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limit,
            )
            .await;
        let Some(id) = id else {
            return response;
        };
        match response {
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                let stream = stream.map(move |event| match event {
                    Err(e) if event_too_large(&e) => {
                        log::warn!(
                            "an MCP server sent an SSE event over the limit of {limit} bytes \
                             (max_message_bytes); the request it answers (id {id}) fails"
                        );
                        Ok(Sse {
                            data: Some(too_large_response(&id, None, limit)),
                            ..Default::default()
                        })
                    }
                    other => other,
                });
                Ok(StreamableHttpPostResponse::Sse(stream.boxed(), session))
            }
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                let standin = too_large_response(&id, None, max_size.min(JSON_BODY_LIMIT));
                let message: ServerJsonRpcMessage = serde_json::from_str(&standin)?;
                Ok(StreamableHttpPostResponse::Json(message, None))
            }
            other => other,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                self.limit,
            )
            .await
    }
}
