//! The OpenAI embeddings API (`POST {base_url}/embeddings`), as OpenAI and the
//! OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LM Studio…) speak it: what a
//! store's `index={"embed": "openai:<model>"}` calls. Requests go through the chat
//! models' transport, so they get the same retries, time limits, response-size
//! limit and secret scrubbing.

use serde::Deserialize;
use serde_json::json;

use super::http::{OverHttp, Transport};
use super::{HttpSettings, ModelError};

const PROVIDER: &str = "openai";

/// An embeddings model behind the OpenAI embeddings API.
///
/// The key and API root are found as [`super::OpenAIChat`]'s are (`api_key` /
/// `OPENAI_API_KEY`, `base_url` / `OPENAI_BASE_URL`).
pub struct OpenAIEmbeddings {
    model: String,
    transport: Transport,
    batch_size: usize,
    dimensions: Option<usize>,
}

impl std::fmt::Debug for OpenAIEmbeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.debug_client(f, "OpenAIEmbeddings", &self.model)
    }
}

impl OverHttp for OpenAIEmbeddings {
    fn transport(&self) -> &Transport {
        &self.transport
    }
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl OpenAIEmbeddings {
    /// `dimensions`: asked of the model (text-embedding-3 models shorten their
    /// vectors); `None` leaves the model's own size. `batch_size`: texts per request.
    pub fn new(
        model: impl Into<String>,
        settings: HttpSettings,
        dimensions: Option<usize>,
        batch_size: usize,
    ) -> Result<Self, ModelError> {
        let (transport, _) =
            super::openai::transport(&settings, "OpenAIEmbeddings", "/embeddings")?;
        Ok(OpenAIEmbeddings {
            model: model.into(),
            transport,
            batch_size: batch_size.max(1),
            dimensions,
        })
    }

    /// One vector per text, in order; requests of at most `batch_size` texts, one
    /// after another. Any failure fails the whole call (nothing partial).
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch_size) {
            let mut body = json!({"model": self.model, "input": chunk, "encoding_format": "float"});
            if let Some(d) = self.dimensions {
                body["dimensions"] = json!(d);
            }
            let resp: Response = self
                .transport
                .post_parsed(&body, |b| serde_json::from_slice(b))
                .await?;
            out.extend(self.in_order(resp, chunk.len())?);
        }
        Ok(out)
    }

    /// The response's vectors in the order of the inputs (`index`), all there.
    fn in_order(&self, resp: Response, n: usize) -> Result<Vec<Vec<f32>>, ModelError> {
        let bad = |why: String| ModelError::Response {
            provider: PROVIDER,
            message: format!("the embeddings response {why}"),
        };
        if resp.data.len() != n {
            return Err(bad(format!(
                "has {} vectors for {n} texts",
                resp.data.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; n];
        for (i, d) in resp.data.into_iter().enumerate() {
            let at = d.index.unwrap_or(i);
            match slots.get_mut(at) {
                Some(slot @ None) => *slot = Some(d.embedding),
                _ => return Err(bad(format!("has a wrong or repeated index {at}"))),
            }
        }
        Ok(slots.into_iter().flatten().collect())
    }
}
