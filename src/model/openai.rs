//! The OpenAI Chat Completions API (`POST {base_url}/chat/completions`), as spoken by
//! OpenAI and the OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LM Studio,
//! OpenRouter…).

use async_trait::async_trait;
use serde::Serialize;

mod request;
mod response;
mod stream;

use request::Body;
use response::Response;

pub(super) use response::parse_response;
pub(super) use stream::StreamParser;

use super::http::{endpoint, ChatBody, OverHttp, Transport};
use super::sse::chat_stream;
use super::{resolve_key, ChatModel, ChatRequest, ChatStream, HttpSettings, ModelError};
use crate::message::Message;

#[cfg(test)]
pub(crate) use response::read_typed;
#[cfg(test)]
pub(crate) use stream::read_stream;

pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const PROVIDER: &str = "openai";

/// A chat model behind the OpenAI Chat Completions API.
///
/// The key comes from [`HttpSettings::api_key`] or `OPENAI_API_KEY`, the API root from
/// [`HttpSettings::base_url`], `OPENAI_BASE_URL` or `https://api.openai.com/v1`. A
/// key is required for OpenAI itself; a server at another `base_url` gets no
/// `Authorization` header when there is no key.
pub struct OpenAIChat {
    model: String,
    settings: HttpSettings,
    transport: Transport,
    official: bool,
}

impl std::fmt::Debug for OpenAIChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.debug_client(f, "OpenAIChat", &self.model)
    }
}

/// The transport of an OpenAI-compatible client to `path` under the API root, and
/// whether the root is OpenAI's own. The root comes from `base_url`,
/// `OPENAI_BASE_URL` or OpenAI's; the key from `api_key` or `OPENAI_API_KEY`
/// (required by OpenAI itself, `who` naming the client in the error), sent as a
/// bearer header beside the settings' headers. Shared by the chat and embeddings
/// clients.
pub(crate) fn transport(
    settings: &HttpSettings,
    who: &str,
    path: &str,
) -> Result<(Transport, bool), ModelError> {
    let base = settings.api_root("OPENAI_BASE_URL", OPENAI_DEFAULT_BASE_URL);
    let official = base.starts_with("https://api.openai.com");
    let key = resolve_key(settings.api_key.as_deref(), "OPENAI_API_KEY");
    if key.is_none() && official {
        return Err(ModelError::Config(format!(
            "{who} needs an API key: pass api_key=... or set OPENAI_API_KEY \
             (a local OpenAI-compatible server needs only base_url=...)"
        )));
    }
    let mut headers = settings.headers.clone();
    if let Some(k) = &key {
        headers.push(("authorization".into(), format!("Bearer {k}")));
    }
    let url = endpoint(&base, path);
    let transport = Transport::for_model(PROVIDER, url, headers, key.as_deref(), settings)?;
    Ok((transport, official))
}

impl OpenAIChat {
    pub fn new(model: impl Into<String>, settings: HttpSettings) -> Result<Self, ModelError> {
        let (transport, official) = transport(&settings, "OpenAIChat", "/chat/completions")?;
        Ok(OpenAIChat {
            model: model.into(),
            settings,
            transport,
            official,
        })
    }
}

impl OverHttp for OpenAIChat {
    fn transport(&self) -> &Transport {
        &self.transport
    }
}

impl ChatBody for OpenAIChat {
    fn body<'a>(&'a self, req: &'a ChatRequest, stream: bool) -> impl Serialize + 'a {
        Body {
            chat: self,
            req,
            stream,
        }
    }
}

#[async_trait]
impl ChatModel for OpenAIChat {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn model_name(&self) -> &str {
        &self.model
    }

    async fn invoke(&self, req: ChatRequest) -> Result<Message, ModelError> {
        let r = self
            .transport
            .post_parsed(&self.body(&req, false), Response::parse)
            .await?;
        let id = crate::message::new_id();
        match r {
            Response::Typed(r) => r.message(id),
            Response::Tree(v) => parse_response(id, &v),
        }
        .map_err(|e| self.transport.redact(e))
    }

    async fn stream(&self, req: ChatRequest) -> Result<ChatStream, ModelError> {
        let resp = self.transport.post_stream(&self.body(&req, true)).await?;
        let id = crate::message::new_id();
        Ok(chat_stream(
            PROVIDER,
            id.clone(),
            resp,
            StreamParser::new(id),
            self.transport.timeout,
            self.transport.secrets(),
        ))
    }
}
